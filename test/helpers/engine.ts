// An engine as the agent builds it, pointed at a test directory, a test
// namespace and one of the haproxy binaries under test.
import { join } from 'node:path';
import { HaproxyEngine } from '../../agent/haproxy/apply/engine.js';
import type { LoadReport } from '../../agent/haproxy/apply/loader.js';
import { DirectSupervisor } from '../../agent/haproxy/process/process.js';
import { workerCommand } from '../../agent/haproxy/process/master-cli.js';
import { parseServerState, type ServerStateEntry } from '../../agent/haproxy/config/server-state.js';
import { rootLogger } from '../../agent/log.js';
import type { HaproxyUnderTest } from './haproxies.js';

export function testEngine(h: HaproxyUnderTest, baseDir: string, netns: string | null, protectNewMembers = true): HaproxyEngine {
  const userGroupFile = join(baseDir, 'haproxy-default-user-group.conf');
  return new HaproxyEngine({
    baseDir,
    haproxyCommand: h.command,
    userGroupFile,
    supervisor: new DirectSupervisor(h.command, netns, userGroupFile),
    log: rootLogger.child({ test: h.label }),
    protectNewMembers,
  });
}

/**
 * Validate, accept and load `text` in one step, a load every time (as an
 * API 1.0 upload + reload with runtime member changes off): the engine's
 * one pipeline with a forced reload.
 */
export async function applyConfig(engine: HaproxyEngine, lbId: string, amphoraId: string, text: string): Promise<LoadReport> {
  return (await engine.apply(lbId, amphoraId, text, { forceReload: 'every test apply loads' })).load!;
}

/** The servers haproxy runs now, from its own `show servers state`. */
export async function serverStates(engine: HaproxyEngine, lbId: string): Promise<ServerStateEntry[]> {
  const text = await workerCommand(engine.files(lbId).masterSocket, 'show servers state', 2000);
  return parseServerState(text).entries;
}

export interface ServerCounters {
  /** Sessions haproxy sent to the server (health checks are not counted). */
  sessions: number;
  connectionErrors: number;
  responseErrors: number;
}

/** Per-server traffic counters from haproxy's own `show stat`. */
export async function serverCounters(engine: HaproxyEngine, lbId: string): Promise<Map<string, ServerCounters>> {
  const text = await workerCommand(engine.files(lbId).masterSocket, 'show stat', 2000);
  const [header, ...rows] = text.trim().split('\n');
  const cols = header!.replace(/^# /, '').split(',');
  const at = (name: string) => cols.indexOf(name);
  const out = new Map<string, ServerCounters>();
  for (const row of rows) {
    const f = row.split(',');
    const name = f[at('svname')]!;
    if (name === 'FRONTEND' || name === 'BACKEND') continue;
    out.set(name, {
      sessions: Number(f[at('stot')] || 0),
      connectionErrors: Number(f[at('econ')] || 0),
      responseErrors: Number(f[at('eresp')] || 0),
    });
  }
  return out;
}
