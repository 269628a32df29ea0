// The record of the last verified (re)load of a load balancer: which worker
// came up and the master's reload counter then. Crash recovery compares the
// counter with the master's to tell whether an interrupted reload happened.
import { readTextIfExists, writeFileAtomic } from '../../system/files.js';
import type { LoadBalancerFiles } from '../layout.js';

export interface AppliedRecord {
  workerPid: number | null;
  /** The master's reload counter after this load. */
  masterReloads: number;
}

export async function readApplied(files: LoadBalancerFiles): Promise<AppliedRecord | null> {
  const text = await readTextIfExists(files.applied);
  return text ? (JSON.parse(text) as AppliedRecord) : null;
}

export function writeApplied(files: LoadBalancerFiles, record: AppliedRecord): Promise<void> {
  return writeFileAtomic(files.applied, JSON.stringify(record), 0o600);
}
