// Octavia's own renderer (python3-octavia's JinjaTemplater and LvsJinjaTemplater) as a
// reference for parity tests: the same spec, rendered by Octavia. One long-running
// Python process answers requests in order; see test/interop/octavia_render.py for
// what is mapped from the spec to Octavia's data models, and why.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { AmphoraFacts, RenderSettings } from '../../agent/render/settings.js';
import type { LoadBalancerSpec } from '../../agent/model/spec/types.js';
import { OCTAVIAS, octaviaPython, type OctaviaUnderTest } from './haproxies.js';

const RENDERER = fileURLToPath(new URL('../../../test/interop/octavia_render.py', import.meta.url));

/** CONF overrides, in Octavia's option names. Left-out options keep Octavia's defaults. */
export interface OctaviaSettings {
  base_path?: string;
  base_cert_dir?: string;
  connection_logging?: boolean;
  user_log_format?: string;
  timeout_client_data?: number;
  timeout_member_connect?: number;
  timeout_member_data?: number;
  timeout_tcp_inspect?: number;
  default_connection_limit?: number;
  haproxy_stick_size?: string;
  user_log_facility?: number;
  administrative_log_facility?: number;
  default_listener_ciphers?: string;
  default_listener_tls_versions?: string[];
  default_listener_alpn_protocols?: string[];
  default_pool_ciphers?: string;
  default_pool_tls_versions?: string[];
  default_pool_alpn_protocols?: string[];
}

/** Our render settings as the Octavia options they stand for (networkNamespace has none: it is fixed there). */
export function octaviaSettings(s: RenderSettings): OctaviaSettings {
  return {
    base_path: s.basePath,
    base_cert_dir: s.baseCertDir,
    connection_logging: s.connectionLogging,
    user_log_format: s.userLogFormat,
    timeout_client_data: s.timeoutClientData,
    timeout_member_connect: s.timeoutMemberConnect,
    timeout_member_data: s.timeoutMemberData,
    timeout_tcp_inspect: s.timeoutTcpInspect,
    default_connection_limit: s.defaultConnectionLimit,
    haproxy_stick_size: s.stickSize,
    user_log_facility: s.userLogFacility,
    administrative_log_facility: s.administrativeLogFacility,
  };
}

/** The part of /1.0/details that Octavia's templater reads (agent/info/details.ts writes the whole document). */
export interface OctaviaAmpDetails {
  cpu_count: number;
  memory: { free: number; buffers: number; cached: number };
  active_tuned_profiles: string;
}

/** Our amphora facts as the details document Octavia would have fetched. */
export function octaviaAmpDetails(f: AmphoraFacts): OctaviaAmpDetails {
  return {
    cpu_count: f.cpuCount,
    memory: { free: f.memoryKb.free, buffers: f.memoryKb.buffers, cached: f.memoryKb.cached },
    active_tuned_profiles: f.tunedProfiles.join(' '),
  };
}

export interface OctaviaRendered {
  /** haproxy.cfg, or null when the load balancer has only UDP/SCTP listeners. */
  haproxy: string | null;
  /** keepalived LVS config per UDP/SCTP listener id. */
  lvs: Record<string, string>;
  /** Octavia's log warnings during the render (e.g. an L7 rule it dropped). */
  warnings: string[];
}

export interface BenchResult {
  /** Milliseconds of each build_config call (model building excluded). */
  ms: number[];
  /** Size of the rendered haproxy.cfg in bytes. */
  bytes: number;
}

interface Answer {
  ok: boolean;
  result?: unknown;
  exception?: string;
  message?: string;
  trace?: string;
}

export class OctaviaRendererError extends Error {
  constructor(
    readonly exception: string,
    message: string,
    readonly trace: string,
  ) {
    super(`${exception}: ${message}`);
    this.name = 'OctaviaRendererError';
  }
}

export class OctaviaRenderer {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly pending: { resolve: (a: Answer) => void; reject: (e: Error) => void }[] = [];
  private exited: Error | null = null;
  stderr = '';

  private constructor(readonly release: OctaviaUnderTest) {
    this.child = spawn(...octaviaPython(release, RENDERER), { env: { ...process.env, PYTHONUNBUFFERED: '1' } });
    this.child.stderr.on('data', (d) => {
      this.stderr += d;
    });
    createInterface({ input: this.child.stdout }).on('line', (line) => this.pending.shift()?.resolve(JSON.parse(line) as Answer));
    const fail = (why: string) => {
      this.exited = new Error(`octavia_render.py ${why}\n${this.stderr}`);
      for (const p of this.pending.splice(0)) p.reject(this.exited);
    };
    this.child.on('error', (e) => fail(`could not run: ${e.message}`));
    this.child.on('exit', (code, signal) => fail(`exited (${signal ?? code})`));
  }

  /** Start the Python process and wait until Octavia is imported. */
  static async start(release: OctaviaUnderTest = OCTAVIAS[0]!): Promise<OctaviaRenderer> {
    const r = new OctaviaRenderer(release);
    await r.request('ping', {});
    return r;
  }

  private request(op: string, args: unknown): Promise<unknown> {
    if (this.exited) return Promise.reject(this.exited);
    return new Promise<Answer>((resolve, reject) => {
      this.pending.push({ resolve, reject });
      this.child.stdin.write(`${JSON.stringify({ op, args })}\n`);
    }).then((a) => {
      if (!a.ok) throw new OctaviaRendererError(a.exception ?? 'Error', a.message ?? '', a.trace ?? '');
      return a.result;
    });
  }

  /** Octavia's versions as the Python side sees them (octavia, jinja2). */
  versions(): Promise<Record<string, string>> {
    return this.request('ping', {}) as Promise<Record<string, string>>;
  }

  /**
   * Render a validated spec (defaults filled in) with Octavia, for haproxy `haproxyVersion` ("2.6").
   * `ampDetails`: the amphora's /1.0/details as 16's and 19's driver hands it to build_config (11 takes none).
   * `unpatched`: without the templater's OSSA-2026-039 checks (ciphers, redirect URLs, L7 rule
   * values), as Octavia 11.0.0-2 renders before Debian's fix (see octavia_render.py).
   */
  render(
    spec: LoadBalancerSpec,
    haproxyVersion: string,
    settings: OctaviaSettings,
    ampDetails: OctaviaAmpDetails | null = null,
    options: { unpatched?: boolean } = {},
  ): Promise<OctaviaRendered> {
    return this.request('render', {
      spec,
      haproxy_version: haproxyVersion,
      settings,
      amp_details: ampDetails,
      unpatched: options.unpatched ?? false,
    }) as Promise<OctaviaRendered>;
  }

  /** Time `iterations` build_config calls on models built once; `warmup` untimed calls go first. */
  bench(
    spec: LoadBalancerSpec,
    haproxyVersion: string,
    settings: OctaviaSettings,
    iterations: number,
    options: { warmup?: number } = {},
  ): Promise<BenchResult> {
    return this.request('bench', {
      spec,
      haproxy_version: haproxyVersion,
      settings,
      iterations,
      warmup: options.warmup ?? 0,
    }) as Promise<BenchResult>;
  }

  /**
   * The spec this project's Octavia driver builds (octavia-driver/, Octavia
   * 16 and 19) from the models `render` hands the templater; `driverPath`:
   * the folder holding the amphora_spec_driver package, visible inside the
   * release's root filesystem.
   */
  driverSpec(spec: LoadBalancerSpec, settings: OctaviaSettings, driverPath: string): Promise<unknown> {
    return this.request('driver_spec', { spec, haproxy_version: '3.0', settings, driver_path: driverPath });
  }

  /** End the process (closing its stdin) and wait for it to exit. */
  async close(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const done = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.stdin.end();
    await done;
  }
}

/**
 * Octavia orders L7 policies by inserting each at its position; a declarative
 * spec sorts by position. Give Octavia the final order as positions 1..n.
 */
export function forOctavia(spec: LoadBalancerSpec): LoadBalancerSpec {
  const copy = structuredClone(spec);
  for (const l of copy.listeners) {
    l.l7policies = l.l7policies
      .map((p, i) => ({ p, i }))
      .sort((a, b) => (a.p.position ?? Infinity) - (b.p.position ?? Infinity) || a.i - b.i)
      .map(({ p }, i) => ({ ...p, position: i + 1 }));
  }
  return copy;
}
