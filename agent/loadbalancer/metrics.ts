// Apply counters for GET /2.0/metrics (applies through both APIs), in Prometheus text format. prom-client
// does the exposition format and histogram buckets, which are easy to get
// subtly wrong by hand.
import { Counter, Histogram, Registry } from 'prom-client';
import { isReload, type RecordedOutcome } from '../outcome.js';

/** Seconds since a process.hrtime.bigint() reading: what the latency histogram takes. */
export function secondsSince(started: bigint): number {
  return Number(process.hrtime.bigint() - started) / 1e9;
}

/** Which API asked: 2.0 spec applies, or API 1.0 reloads and starts (Octavia's controller). */
export type ApplyApi = '1.0' | '2.0';

export class ApplyMetrics {
  readonly registry = new Registry();
  private readonly reloads = new Counter({
    name: 'amphora_agent_reloads_total', help: 'haproxy starts and reloads made by applies, by API',
    labelNames: ['api'], registers: [this.registry],
  });
  private readonly runtimeChanges = new Counter({
    name: 'amphora_agent_runtime_changes_total', help: 'applies made through the runtime API, without a reload, by API',
    labelNames: ['api'], registers: [this.registry],
  });
  private readonly failed = new Counter({
    name: 'amphora_agent_failed_applies_total', help: 'applies that failed (haproxy refused the config or did not load it), by API',
    labelNames: ['api'], registers: [this.registry],
  });
  private readonly latency = new Histogram({
    name: 'amphora_agent_apply_duration_seconds', help: 'Time to apply a spec (2.0) or an uploaded config (1.0 reload), by API and outcome',
    labelNames: ['api', 'outcome'], buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registers: [this.registry],
  });

  record(api: ApplyApi, outcome: RecordedOutcome, seconds: number): void {
    if (outcome !== 'failed' && isReload(outcome)) this.reloads.inc({ api });
    if (outcome === 'runtime') this.runtimeChanges.inc({ api });
    if (outcome === 'failed') this.failed.inc({ api });
    this.latency.observe({ api, outcome }, seconds);
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
