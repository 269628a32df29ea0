// Who keeps a load balancer's haproxy running, and how that goes: systemd's
// unit state, or the direct supervisor's restarts (watchdog.ts). API 2.0's
// status words it as JSON (loadbalancer/status.ts); the metrics read it.
import { exists } from '../../system/files.js';
import type { LoadBalancerState } from '../apply/load-balancer-state.js';
import type { HaproxySupervisor } from './process.js';
import type { RestartState } from './restart-backoff.js';
import type { UnitState } from './systemd-unit.js';

export type Supervision = { running: boolean; stoppedBySignal: boolean } & (
  | { processManager: 'systemd'; unit: UnitState }
  | { processManager: 'direct'; stoppedOnPurpose: boolean; restarts: RestartState }
);

export async function supervisionOf(supervisor: HaproxySupervisor, state: LoadBalancerState): Promise<Supervision> {
  const inst = await state.storedInstance();
  const status = await supervisor.status(inst);
  const base = { running: status.running, stoppedBySignal: status.stopped === true };
  const stoppedOnPurpose = await exists(state.files.stopped);
  const unit = await supervisor.unitState?.(inst);
  if (unit) return { processManager: 'systemd', ...base, unit };
  return { processManager: 'direct', ...base, stoppedOnPurpose, restarts: state.restarts.state(Date.now()) };
}
