// What the renderer needs besides the spec: Octavia's controller-side
// [haproxy_amphora] and [amphora_agent] settings (same names, same defaults)
// and what the target haproxy binary can do.

export interface RenderSettings {
  /** [haproxy_amphora] base_path: stats sockets, server-state files, LVS check scripts. */
  basePath: string;
  /** [haproxy_amphora] base_cert_dir: <dir>/<lb_id>/<file>.pem holds the spec's *_ref files. */
  baseCertDir: string;
  connectionLogging: boolean;
  /** Octavia's user_log_format; `{{ project_id }}` and `{{ lb_id }}` are substituted. */
  userLogFormat: string;
  userLogFacility: number;
  administrativeLogFacility: number;
  timeoutClientData: number;
  timeoutMemberConnect: number;
  timeoutMemberData: number;
  timeoutTcpInspect: number;
  defaultConnectionLimit: number;
  stickSize: string;
  /** The network namespace keepalived's LVS configs name (null: none, keepalived runs in the agent's). */
  networkNamespace: string | null;
}

export const DEFAULT_RENDER_SETTINGS: RenderSettings = {
  basePath: '/var/lib/octavia',
  baseCertDir: '/var/lib/octavia/certs',
  connectionLogging: true,
  userLogFormat: '{{ project_id }} {{ lb_id }} %f %ci %cp %t %{+Q}r %ST %B %U %[ssl_c_verify] %{+Q}[ssl_c_s_dn] %b %s %Tt %tsc',
  userLogFacility: 0,
  administrativeLogFacility: 1,
  timeoutClientData: 50000,
  timeoutMemberConnect: 5000,
  timeoutMemberData: 50000,
  timeoutTcpInspect: 0,
  defaultConnectionLimit: 50000,
  stickSize: '10k',
  networkNamespace: 'amphora-haproxy',
};

/**
 * What the amphora itself has, as Octavia 19's controller reads it from the
 * agent's /1.0/details (cpu_count, memory, active_tuned_profiles) to size
 * haproxy. Gathered by the caller (agent/info/amphora-facts.ts), so rendering
 * stays pure.
 */
export interface AmphoraFacts {
  cpuCount: number;
  /** Active TuneD profiles; CPU pinning only under the "amphora" profile. */
  tunedProfiles: string[];
  /** /proc/meminfo MemFree, Buffers and Cached, in kB. */
  memoryKb: { free: number; buffers: number; cached: number };
}

export interface RenderTarget {
  /** The binary applies `init-state fully-down` at startup (capability probe). */
  initStateAtStartup: boolean;
  /** Without them (a render elsewhere than on the amphora), haproxy keeps its defaults. */
  amphora?: AmphoraFacts;
}

export interface RenderedFile {
  path: string;
  content: string;
}

export interface RenderedLoadBalancer {
  /** haproxy.cfg, or null when the load balancer has only UDP/SCTP listeners. */
  haproxyConfig: string | null;
  /** crt-list files of TERMINATED_HTTPS listeners (<base_cert_dir>/<lb>/<listener>.pem). */
  crtLists: RenderedFile[];
  /** keepalived LVS configs, one per UDP/SCTP listener (only comments while it is disabled or has no pool). */
  lvsConfigs: { listenerId: string; content: string }[];
}
