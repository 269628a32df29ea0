// Member changes through haproxy's runtime API (the worker CLI, reached over
// the master socket), so they need no reload. A member added or re-enabled
// here is admitted as its step says (admission.ts): with init-state on its
// line `enable server` leaves it DOWN until checks pass; otherwise an added
// one is forced DOWN at weight 0 and then weighted, so haproxy's own checks
// bring it UP, and a re-enabled one drains forced DOWN until the agent sees
// its checks pass (`pending`, promoted by the engine's ready watcher).
import { parseShowStat } from './stats.js';
import { isReady } from '../../model/admission.js';
import { firstUnsafeWord } from './cli-words.js';
import { memberKey } from '../../model/names.js';
import { workerCommand } from './master-cli.js';
import { parseServerState, type ServerStateEntry } from '../config/server-state.js';
import { CHECK_FAILED } from '../config/carried-checks.js';
import type { RuntimeStep } from '../apply/runtime-plan.js';

export class RuntimeCommandError extends Error {}

export interface PendingMember {
  backend: string;
  server: string;
  /** Check health at which the agent makes it ready. */
  rise: number;
  /**
   * A member whose passed checks a reload carried over (carried-checks.ts):
   * how many earlier workers counted, and the shortest time between two of
   * its checks. It is down, not drained: the agent makes it UP.
   */
  carried?: { checks: number; everyMs: number };
}

/** A member removed from the config that haproxy still holds, in maintenance, until its sessions end. */
export interface RetiredMember {
  backend: string;
  server: string;
}

export interface RuntimeResult {
  /** Members in maintenance until their first passing check. */
  pending: PendingMember[];
  /** Members that were made ready or removed: no longer pending. */
  settled: string[];
  /** Members put in maintenance to be deleted once their sessions have ended. */
  retired: RetiredMember[];
}

// Answers that mean success; anything else is haproxy explaining a refusal.
const OK_ANSWERS = /^(|New server registered\.|Server deleted\.)$/;
/** `del server`'s refusal while a session or pooled connection remains. */
const STILL_CONNECTED = /^Server still has connections attached to it/;
/** Where a retired member is parked to close its idle connections: TEST-NET-1, never a member. */
const PARKED_ADDRESS = '192.0.2.1';

export class RuntimeApi {
  constructor(
    private readonly socket: string,
    private readonly drainTimeoutMs: number,
  ) {}

  async command(cmd: string): Promise<void> {
    const answer = await this.answer(cmd);
    if (!OK_ANSWERS.test(answer)) throw new RuntimeCommandError(`"${cmd}": ${answer}`);
  }

  /** haproxy's answer to `cmd`, trimmed. */
  private async answer(cmd: string): Promise<string> {
    // The plan already sent such words down the reload path; this is the last gate before the socket.
    const unsafe = firstUnsafeWord(cmd.split(' '));
    if (unsafe !== null) throw new RuntimeCommandError(`"${cmd}": ${JSON.stringify(unsafe)} would not reach haproxy as one word`);
    return (await workerCommand(this.socket, cmd, 5000)).trim();
  }

  async servers(backend?: string): Promise<ServerStateEntry[]> {
    const text = await workerCommand(this.socket, backend ? `show servers state ${backend}` : 'show servers state', 5000);
    return parseServerState(text).entries;
  }

  async apply(steps: RuntimeStep[]): Promise<RuntimeResult> {
    const result: RuntimeResult = { pending: [], settled: [], retired: [] };
    for (const step of steps) {
      const id = memberKey(step.backend, step.server);
      switch (step.kind) {
        case 'add': {
          const args = step.args.filter((a) => a !== 'disabled');
          const forcedDown = step.enabled && step.admission.method === 'forced-down';
          // A dynamic server starts in maintenance with checks off.
          await this.command(`add server ${id} ${(forcedDown ? withWeight(args, '0') : args).join(' ')}`);
          if (step.checked) await this.command(`enable health ${id}`);
          if (!step.enabled) break;
          if (forcedDown) {
            // Out of maintenance it is UP at once, at weight 0: no request
            // (nobody can hold a persistence cookie for a new server). Forced
            // DOWN, health 0, then its weight: haproxy's own rise-th passing
            // check brings it UP (admission.ts).
            await this.command(`set server ${id} state ready`);
            await this.command(`set server ${id} health down`);
            await this.command(`set server ${id} weight ${weightOf(args)}`);
          } else if (step.admission.ready === 'agent') result.pending.push({ backend: step.backend, server: step.server, rise: step.rise });
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
        case 'retire':
          // Maintenance, not drain: a drained server still takes the
          // requests that persistence sends it, which a reload would not.
          // Established sessions go on, as on a reloaded-away worker.
          await this.command(`set server ${id} state maint`);
          result.settled.push(id);
          result.retired.push({ backend: step.backend, server: step.server });
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

  /** Delete the retired members haproxy lets go (no session left); returns those it still holds. */
  async deleteRetired(retired: RetiredMember[]): Promise<RetiredMember[]> {
    const held: RetiredMember[] = [];
    let sessions: Map<string, number> | null = null;
    for (const r of retired) {
      const id = memberKey(r.backend, r.server);
      let answer = await this.answer(`del server ${id}`);
      if (STILL_CONNECTED.test(answer)) {
        sessions ??= new Map(parseShowStat(await workerCommand(this.socket, 'show stat', 5000)).map((row) => [memberKey(row.pxname, row.svname), row.scur]));
        if ((sessions.get(id) ?? 0) === 0) {
          // No session left, only pooled idle connections, which haproxy 2.6
          // keeps for a server in maintenance (it closes them on a new
          // address; 3.x on entering maintenance). Nothing is sent to a
          // server in maintenance, so the address it is parked on is never used.
          await this.answer(`set server ${id} addr ${PARKED_ADDRESS}`);
          answer = await this.answer(`del server ${id}`);
        }
      }
      // Deleted, or gone already (a reload, or a backend removed since): either way not held.
      if (!/^(Server deleted\.|No such (server|backend)\.)$/.test(answer)) held.push(r);
    }
    return held;
  }

  private async activeSessions(backend: string, server: string): Promise<number> {
    const rows = parseShowStat(await workerCommand(this.socket, 'show stat', 5000));
    return rows.find((r) => r.pxname === backend && r.svname === server)?.scur ?? 0;
  }

  /**
   * Make ready the pending members whose checks passed. `lookedAgoMs`: the
   * time since the agent last looked; a carried count it may have missed a
   * failure in is dropped (`voided`), and haproxy's own rise decides.
   */
  async promote(pending: PendingMember[], lookedAgoMs: number): Promise<{ waiting: PendingMember[]; voided: PendingMember[] }> {
    const waiting: PendingMember[] = [];
    const voided: PendingMember[] = [];
    if (pending.length === 0) return { waiting, voided };
    const entries = new Map((await this.servers()).map((e) => [memberKey(e.backend, e.server), e]));
    for (const p of pending) {
      const id = memberKey(p.backend, p.server);
      const entry = entries.get(id);
      if (!entry) continue; // removed meanwhile
      if (p.carried && (entry.checkResult === CHECK_FAILED || lookedAgoMs >= p.carried.everyMs)) voided.push(p);
      else if (isReady(entry, p.rise)) await this.command(`set server ${id} ${p.carried ? 'health up' : 'state ready'}`);
      else waiting.push(p);
    }
    return { waiting, voided };
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A server line's words with its weight replaced (or added). */
function withWeight(args: string[], weight: string): string[] {
  const i = args.lastIndexOf('weight');
  return i >= 0 && i + 1 < args.length ? [...args.slice(0, i + 1), weight, ...args.slice(i + 2)] : [...args, 'weight', weight];
}

/** The weight a server line gives (haproxy's default 1). */
function weightOf(args: string[]): string {
  const i = args.lastIndexOf('weight');
  return i >= 0 && i + 1 < args.length ? args[i + 1]! : '1';
}
