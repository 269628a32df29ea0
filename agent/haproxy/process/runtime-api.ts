// Member changes through haproxy's runtime API (the worker CLI, reached over
// the master socket), so they need no reload. A member added or re-enabled
// here is admitted as its step says (admission.ts): with init-state on its
// line `enable server` leaves it DOWN until checks pass; otherwise an added
// one stays in maintenance with checks running, a re-enabled one drains
// forced DOWN, and either is made ready once its checks passed (`pending`,
// promoted by the engine's ready watcher).
import { parseShowStat } from './stats.js';
import { isReady } from '../../model/admission.js';
import { firstUnsafeWord } from './cli-words.js';
import { memberKey } from '../../model/names.js';
import { workerCommand } from './master-cli.js';
import { parseServerState, type ServerStateEntry } from '../config/server-state.js';
import type { RuntimeStep } from '../apply/runtime-plan.js';

export class RuntimeCommandError extends Error {}

export interface PendingMember {
  backend: string;
  server: string;
  /** Check health at which haproxy counts the server up. */
  rise: number;
}

export interface RuntimeResult {
  /** Members in maintenance until their first passing check. */
  pending: PendingMember[];
  /** Members that were made ready or removed: no longer pending. */
  settled: string[];
}

// Answers that mean success; anything else is haproxy explaining a refusal.
const OK_ANSWERS = /^(|New server registered\.|Server deleted\.)$/;

export class RuntimeApi {
  constructor(private readonly socket: string, private readonly drainTimeoutMs: number) {}

  async command(cmd: string): Promise<void> {
    // The plan already sent such words down the reload path; this is the last gate before the socket.
    const unsafe = firstUnsafeWord(cmd.split(' '));
    if (unsafe !== null) throw new RuntimeCommandError(`"${cmd}": ${JSON.stringify(unsafe)} would not reach haproxy as one word`);
    const answer = (await workerCommand(this.socket, cmd, 5000)).trim();
    if (!OK_ANSWERS.test(answer)) throw new RuntimeCommandError(`"${cmd}": ${answer}`);
  }

  async servers(backend?: string): Promise<ServerStateEntry[]> {
    const text = await workerCommand(this.socket, backend ? `show servers state ${backend}` : 'show servers state', 5000);
    return parseServerState(text).entries;
  }

  async apply(steps: RuntimeStep[]): Promise<RuntimeResult> {
    const result: RuntimeResult = { pending: [], settled: [] };
    for (const step of steps) {
      const id = memberKey(step.backend, step.server);
      switch (step.kind) {
        case 'add': {
          // A dynamic server starts in maintenance with checks off.
          await this.command(`add server ${id} ${step.args.filter((a) => a !== 'disabled').join(' ')}`);
          if (step.checked) await this.command(`enable health ${id}`);
          if (!step.enabled) break;
          if (step.admission.ready === 'agent') result.pending.push({ backend: step.backend, server: step.server, rise: step.rise });
          else await this.command(`enable server ${id}`);
          break;
        }
        case 'weight':
          await this.command(`set server ${id} weight ${step.weight}`);
          break;
        case 'admin-down':
          await this.command(`set server ${id} state maint`);
          result.settled.push(id);
          break;
        case 'admin-up':
          if (step.admission.ready !== 'agent') {
            await this.command(`set server ${id} state ready`);
            break;
          }
          // Maintenance pauses the checks (health 0), and leaving it makes a
          // server UP at once on its last result (2.6, 3.0). So the member
          // drains instead, where checks run, forced DOWN until they pass
          // again; the agent makes it ready then (promote).
          await this.command(`set server ${id} state drain`);
          await this.command(`set server ${id} health down`);
          result.pending.push({ backend: step.backend, server: step.server, rise: step.rise });
          break;
        case 'remove':
          await this.remove(step.backend, step.server);
          result.settled.push(id);
          break;
      }
    }
    return result;
  }

  /**
   * Drain (no new sessions), wait for the sessions to end or the drain
   * timeout, then maintenance, close what is left and delete. `del server`
   * also waits for idle pooled connections to go, hence the retries.
   */
  private async remove(backend: string, server: string): Promise<void> {
    const id = memberKey(backend, server);
    const deadline = Date.now() + this.drainTimeoutMs;
    await this.command(`set server ${id} state drain`);
    while (Date.now() < deadline && (await this.activeSessions(backend, server)) > 0) await sleep(50);
    await this.command(`set server ${id} state maint`);
    await this.command(`shutdown sessions server ${id}`);
    for (;;) {
      try {
        await this.command(`del server ${id}`);
        return;
      } catch (err) {
        if (Date.now() >= deadline + 2000) throw err;
        await sleep(100);
      }
    }
  }

  private async activeSessions(backend: string, server: string): Promise<number> {
    const rows = parseShowStat(await workerCommand(this.socket, 'show stat', 5000));
    return rows.find((r) => r.pxname === backend && r.svname === server)?.scur ?? 0;
  }

  /** Make ready the pending members whose checks passed; returns those still waiting. */
  async promote(pending: PendingMember[]): Promise<PendingMember[]> {
    if (pending.length === 0) return [];
    const entries = await this.servers();
    const waiting: PendingMember[] = [];
    for (const p of pending) {
      const entry = entries.find((e) => e.backend === p.backend && e.server === p.server);
      if (!entry) continue; // removed meanwhile
      if (isReady(entry, p.rise)) await this.command(`set server ${memberKey(p.backend, p.server)} state ready`);
      else waiting.push(p);
    }
    return waiting;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
