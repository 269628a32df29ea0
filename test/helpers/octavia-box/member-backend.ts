// A backend in a member namespace of the box (box-network.ts Member), driven
// from the test's process: member-backend-main.ts runs the TestBackend there.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface, type Interface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { BackendMode } from '../backend.js';
import type { Member } from './box-network.js';

const MAIN = fileURLToPath(new URL('./member-backend-main.js', import.meta.url));

export interface BackendStats {
  mode: BackendMode;
  requests: number;
  checks: number;
  firstServedAt: number | null;
}

export class MemberBackend {
  private readonly answers: ((s: BackendStats) => void)[] = [];

  private constructor(
    readonly member: Member,
    readonly port: number,
    private readonly child: ChildProcess,
    lines: Interface,
  ) {
    lines.on('line', (l) => this.answers.shift()?.(JSON.parse(l) as BackendStats));
  }

  /** Listening at the member's address and `port` once this resolves. */
  static async start(member: Member, port: number, mode: BackendMode = 'ready', name = `member-${member.n}`): Promise<MemberBackend> {
    const child = spawn(member.exec[0]!, [...member.exec.slice(1), process.execPath, MAIN, name, member.ip, String(port), mode], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const lines = createInterface({ input: child.stdout! });
    const b = new MemberBackend(member, port, child, lines);
    // Killed with the test's process; the hook goes with the backend (a
    // rolling replacement starts many).
    const kill = () => child.kill('SIGKILL');
    process.on('exit', kill);
    child.once('exit', () => process.off('exit', kill));
    await new Promise<void>((resolve, reject) => {
      b.answers.push(() => resolve());
      child.once('exit', (code) => reject(new Error(`backend in ${member.netns} exited (${code}) before listening`)));
    });
    return b;
  }

  private ask(line: string): Promise<BackendStats> {
    return new Promise((resolve) => {
      this.answers.push(resolve);
      this.child.stdin!.write(`${line}\n`);
    });
  }

  setMode(mode: BackendMode): Promise<BackendStats> {
    return this.ask(`mode ${mode}`);
  }

  stats(): Promise<BackendStats> {
    return this.ask('stats');
  }

  /** Stopped: its listener closed, the process gone. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const gone = new Promise((r) => this.child.once('exit', r));
    this.child.stdin!.end();
    await gone;
  }
}
