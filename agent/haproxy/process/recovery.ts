// At agent start: finish what a crash interrupted. A `.prev` beside the live
// config means a reload was in flight. The master's reload counter tells
// whether it was triggered: if it moved past the recorded value and the new
// worker comes up, haproxy runs the new live config and that is recorded.
// Otherwise the previous live config is put back and haproxy is reloaded
// with it: whether the dead agent's reload is still on its way cannot be
// known (a master may read the file after any grace period; seen in CI on
// 2.6 and 3.2), so the agent makes the answer true instead of guessing it.
// A late reload from the dead agent then loads the same file.
import type { Logger } from '../../log.js';
import { readTextIfExists, removeFile, writeFileAtomic } from '../../system/files.js';
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
    // master may not have taken it yet. Look again once a queued command
    // would usually have run: a reload seen then needs no second one.
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
    if (status.running) await reloadRestored(inst, supervisor, log);
    else log.warn({ lbId }, 'interrupted reload had not happened; restored the previous live config');
  }
  await removeFile(files.livePrevious);
  return true;
}

async function reloadRestored(inst: HaproxyInstance, supervisor: HaproxySupervisor, log: Logger): Promise<void> {
  const { files, lbId } = inst;
  try {
    const after = await supervisor.reload(inst, await settledStatus(inst, supervisor));
    await writeApplied(files, { workerPid: after.workerPid, masterReloads: after.table?.reloads ?? 0 });
    log.warn({ lbId, workerPid: after.workerPid }, 'interrupted reload not confirmed; haproxy reloaded with the previous live config');
  } catch (err) {
    log.error({ lbId, err: String(err) }, 'interrupted reload not confirmed, and the previous live config did not reload');
  }
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
