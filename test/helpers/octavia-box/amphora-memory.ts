// The memory an amphora container uses, per systemd unit: the PSS of every
// process in the container's PID namespace, summed by the unit its cgroup
// names (amphora-agent.service, haproxy-<lb>.service, ...). PSS, so shared
// pages (one node or python binary, haproxy's master and worker) count once.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

function pidNamespace(pid: number | string): string | null {
  try {
    return readlinkSync(`/proc/${pid}/ns/pid`);
  } catch {
    return null;
  }
}

/** A process's PSS in KiB (0 once it has exited). */
export function pssKiB(pid: number | string): number {
  try {
    const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0; // exited meanwhile
  }
}

/** The innermost unit (or scope) a process's cgroup path names, or "other". */
function unitOf(pid: string): string {
  try {
    const paths = readFileSync(`/proc/${pid}/cgroup`, 'utf8')
      .split('\n')
      .map((l) => l.split(':').slice(2).join(':'));
    const names = paths.flatMap((p) => p.split('/')).filter((c) => /\.(service|scope)$/.test(c));
    return names.pop() ?? 'other';
  } catch {
    return 'other';
  }
}

/** KiB of PSS per unit of the container whose PID 1 is `leader`. */
export function amphoraMemory(leader: number): Record<string, number> {
  const ns = pidNamespace(leader);
  const byUnit: Record<string, number> = {};
  if (!ns) return byUnit;
  for (const pid of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    if (pidNamespace(pid) !== ns) continue;
    const unit = unitOf(pid);
    byUnit[unit] = (byUnit[unit] ?? 0) + pssKiB(pid);
  }
  return byUnit;
}
