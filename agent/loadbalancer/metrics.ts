// Apply counters for GET /2.0/metrics, in Prometheus text format. prom-client
// does the exposition format and histogram buckets, which are easy to get
// subtly wrong by hand.
import { Counter, Histogram, Registry } from 'prom-client';

export type ApplyOutcome = 'reloaded' | 'started' | 'runtime' | 'unchanged' | 'failed';

export class ApplyMetrics {
  readonly registry = new Registry();
  private readonly reloads = new Counter({
    name: 'amphora_agent_reloads_total', help: 'haproxy starts and reloads made by API 2.0 applies', registers: [this.registry],
  });
  private readonly runtimeChanges = new Counter({
    name: 'amphora_agent_runtime_changes_total', help: 'API 2.0 applies made through the runtime API, without a reload', registers: [this.registry],
  });
  private readonly failed = new Counter({
    name: 'amphora_agent_failed_applies_total', help: 'API 2.0 applies that failed (haproxy refused the config or did not load it)', registers: [this.registry],
  });
  private readonly latency = new Histogram({
    name: 'amphora_agent_apply_duration_seconds', help: 'Time to apply a spec, by outcome',
    labelNames: ['outcome'], buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registers: [this.registry],
  });

  record(outcome: ApplyOutcome, seconds: number): void {
    if (outcome === 'reloaded' || outcome === 'started') this.reloads.inc();
    if (outcome === 'runtime') this.runtimeChanges.inc();
    if (outcome === 'failed') this.failed.inc();
    this.latency.observe({ outcome }, seconds);
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
