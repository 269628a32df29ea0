// Apply counters for GET /2.0/metrics (applies through both APIs), in Prometheus text format. prom-client
// does the exposition format and histogram buckets, which are easy to get
// subtly wrong by hand.
import type { Counter, Histogram, Registry } from 'prom-client';
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
}

/** The registry and its instruments, made at the first apply or scrape (prom-client is loaded then). */
function instruments(): Instruments {
  const { Counter, Histogram, Registry } = promClient();
  const registry = new Registry();
  return {
    registry,
    reloads: new Counter({
      name: 'amphora_agent_reloads_total', help: 'haproxy starts and reloads made by applies, by API',
      labelNames: ['api'], registers: [registry],
    }),
    runtimeChanges: new Counter({
      name: 'amphora_agent_runtime_changes_total', help: 'applies made through the runtime API, without a reload, by API',
      labelNames: ['api'], registers: [registry],
    }),
    failed: new Counter({
      name: 'amphora_agent_failed_applies_total', help: 'applies that failed (haproxy refused the config or did not load it), by API',
      labelNames: ['api'], registers: [registry],
    }),
    latency: new Histogram({
      name: 'amphora_agent_apply_duration_seconds', help: 'Time to apply a spec (2.0) or an uploaded config (1.0 reload), by API and outcome',
      labelNames: ['api', 'outcome'], buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registers: [registry],
    }),
  };
}

export class ApplyMetrics {
  private made: Instruments | null = null;

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

  text(): Promise<string> {
    return this.m.registry.metrics();
  }

  get contentType(): string {
    return this.m.registry.contentType;
  }
}
