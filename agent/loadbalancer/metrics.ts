// Apply counters for GET /2.0/metrics (applies through both APIs), in Prometheus text format. prom-client
// does the exposition format and histogram buckets, which are easy to get
// subtly wrong by hand.
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Supervision } from '../haproxy/process/supervision.js';
import { lazyRequire } from '../lazy-require.js';
import { isReload, type RecordedOutcome } from '../outcome.js';

const promClient = lazyRequire<typeof import('prom-client')>('prom-client');

/** Seconds since a process.hrtime.bigint() reading: what the latency histogram takes. */
export function secondsSince(started: bigint): number {
  return Number(process.hrtime.bigint() - started) / 1e9;
}

/** Which API asked: 2.0 spec applies, or API 1.0 reloads and starts (Octavia's controller). */
export type ApplyApi = '1.0' | '2.0';

interface Instruments {
  registry: Registry;
  reloads: Counter;
  runtimeChanges: Counter;
  failed: Counter;
  latency: Histogram;
  restarts: Counter;
  up: Gauge;
  stoppedBySignal: Gauge;
  restartsInARow: Gauge;
  restartWait: Gauge;
  unitFailed: Gauge;
  unitRestarts: Gauge;
}

/** Every load balancer's supervision, read at each scrape. */
export type SupervisionSource = () => Promise<{ lbId: string; supervision: Supervision }[]>;

/** The registry and its instruments, made at the first apply or scrape (prom-client is loaded then). */
function instruments(): Instruments {
  const { Counter, Gauge, Histogram, Registry } = promClient();
  const registry = new Registry();
  return {
    registry,
    reloads: new Counter({
      name: 'amphora_agent_reloads_total',
      help: 'haproxy starts and reloads made by applies, by API',
      labelNames: ['api'],
      registers: [registry],
    }),
    runtimeChanges: new Counter({
      name: 'amphora_agent_runtime_changes_total',
      help: 'applies made through the runtime API, without a reload, by API',
      labelNames: ['api'],
      registers: [registry],
    }),
    failed: new Counter({
      name: 'amphora_agent_failed_applies_total',
      help: 'applies that failed (haproxy refused the config or did not load it), by API',
      labelNames: ['api'],
      registers: [registry],
    }),
    latency: new Histogram({
      name: 'amphora_agent_apply_duration_seconds',
      help: 'Time to apply a spec (2.0) or an uploaded config (1.0 reload), by API and outcome',
      labelNames: ['api', 'outcome'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    restarts: new Counter({
      name: 'amphora_agent_haproxy_restarts_total',
      help: 'Restarts of a dead haproxy by the direct supervisor, by load balancer and outcome (started, failed)',
      labelNames: ['lb_id', 'outcome'],
      registers: [registry],
    }),
    ...supervisionGauges(Gauge, registry),
  };
}

function supervisionGauges(Gauge: typeof import('prom-client').Gauge, registry: Registry) {
  const gauge = (name: string, help: string) => new Gauge({ name, help, labelNames: ['lb_id'], registers: [registry] });
  return {
    up: gauge('amphora_agent_haproxy_up', "1 when the load balancer's haproxy master is alive"),
    stoppedBySignal: gauge('amphora_agent_haproxy_stopped_by_signal', "1 when haproxy's master is stopped (SIGSTOP): alive, but answering nothing"),
    restartsInARow: gauge('amphora_agent_haproxy_restarts_in_a_row', 'Direct supervisor: restarts of a haproxy that died again soon after each one'),
    restartWait: gauge(
      'amphora_agent_haproxy_restart_wait_seconds',
      'Direct supervisor: seconds until a dead haproxy is started again (0: no restart waiting)',
    ),
    unitFailed: gauge('amphora_agent_haproxy_unit_failed', 'systemd: 1 when haproxy-<lb>.service is failed (its start limit was hit)'),
    unitRestarts: gauge('amphora_agent_haproxy_unit_restarts', 'systemd: automatic restarts of haproxy-<lb>.service (NRestarts)'),
  };
}

export class ApplyMetrics {
  private made: Instruments | null = null;

  /** `supervision`: haproxy's state per load balancer, for the gauges (none without it). */
  constructor(private readonly supervision?: SupervisionSource) {}

  private get m(): Instruments {
    this.made ??= instruments();
    return this.made;
  }

  record(api: ApplyApi, outcome: RecordedOutcome, seconds: number): void {
    const m = this.m;
    if (outcome !== 'failed' && isReload(outcome)) m.reloads.inc({ api });
    if (outcome === 'runtime') m.runtimeChanges.inc({ api });
    if (outcome === 'failed') m.failed.inc({ api });
    m.latency.observe({ api, outcome }, seconds);
  }

  /** The direct supervisor started (or failed to start) a dead haproxy. */
  haproxyRestart(lbId: string, outcome: 'started' | 'failed'): void {
    this.m.restarts.inc({ lb_id: lbId, outcome });
  }

  async text(): Promise<string> {
    if (this.supervision) await this.readSupervision(this.supervision);
    return this.m.registry.metrics();
  }

  private async readSupervision(source: SupervisionSource): Promise<void> {
    const m = this.m;
    const all = await source();
    // Load balancers deleted since the last scrape disappear.
    for (const g of [m.up, m.stoppedBySignal, m.restartsInARow, m.restartWait, m.unitFailed, m.unitRestarts]) g.reset();
    for (const { lbId, supervision: s } of all) {
      const lb = { lb_id: lbId };
      m.up.set(lb, s.running ? 1 : 0);
      m.stoppedBySignal.set(lb, s.stoppedBySignal ? 1 : 0);
      if (s.processManager === 'direct') {
        m.restartsInARow.set(lb, s.restarts.restartsInARow);
        m.restartWait.set(lb, s.restarts.nextRestartInS);
      } else {
        m.unitFailed.set(lb, s.unit.failed ? 1 : 0);
        m.unitRestarts.set(lb, s.unit.restarts);
      }
    }
  }

  get contentType(): string {
    return this.m.registry.contentType;
  }
}
