// At agent start: finish what a crash interrupted. A `.prev` beside the live
// config means a reload was in flight. The master's reload counter tells
// whether it was triggered: if it moved past the recorded value and the new
// worker comes up, haproxy runs the new live config and that is recorded;
// otherwise (not triggered, or the load failed) the previous live config is
// put back, because that is what still runs.
import type { Logger } from '../log.js';
import { readTextIfExists, removeFile, writeFileAtomic } from '../system/files.js';
import { readApplied, writeApplied } from './applied.js';
import { interruptedReloadOutcome, LOAD_TIMEOUT_MS, type HaproxyInstance, type HaproxyStatus, type HaproxySupervisor } from './process.js';

/** How long a reload command sent by an agent that then died may wait on the master's CLI before it runs. */
const IN_FLIGHT_GRACE_MS = 1000;

/** True when the load balancer had a reload in flight (and is consistent again now). The caller holds its lock. */
export async function recoverInterruptedReload(inst: HaproxyInstance, supervisor: HaproxySupervisor, log: Logger): Promise<boolean> {
  const { files, lbId } = inst;
  const previous = await readTextIfExists(files.livePrevious);
  if (previous === null) return false;
  const applied = await readApplied(files);
  const live = await readTextIfExists(files.live);
  const counted = (s: HaproxyStatus) => s.table !== null && applied !== null && s.table.reloads > applied.masterReloads;
  let status = await settledStatus(inst, supervisor);
  if (status.running && !counted(status)) {
    // The killed agent may have sent the reload just before it died, and the
    // master may not have taken it yet (seen once in CI on 2.6: the previous
    // live config was put back while haproxy loaded the new one). Look again
    // once a queued command would have run.
    await new Promise((r) => setTimeout(r, IN_FLIGHT_GRACE_MS));
    status = await settledStatus(inst, supervisor);
  }
  const triggered = counted(status);
  // A counted reload may still be loading its new worker: wait for its end.
  const loaded = triggered && applied !== null && live !== null ? await interruptedReloadOutcome(files, applied.workerPid) : null;
  if (loaded) {
    await writeApplied(files, { workerPid: loaded.workerPid, masterReloads: loaded.table!.reloads });
    log.warn({ lbId, workerPid: loaded.workerPid }, 'interrupted reload had completed; keeping the new live config');
  } else {
    await writeFileAtomic(files.live, previous, 0o600);
    log.warn({ lbId }, 'interrupted reload had not happened; restored the previous live config');
  }
  await removeFile(files.livePrevious);
  return true;
}

/** Status once the master answers: right after a reload it is briefly unreachable while it re-executes. */
async function settledStatus(inst: HaproxyInstance, supervisor: HaproxySupervisor): Promise<HaproxyStatus> {
  const deadline = Date.now() + LOAD_TIMEOUT_MS;
  for (;;) {
    const status = await supervisor.status(inst);
    if (!status.running || (status.table && status.workerPid) || Date.now() > deadline) return status;
    await new Promise((r) => setTimeout(r, 20));
  }
}
