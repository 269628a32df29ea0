// amphora-agent.conf (oslo.config INI) -> one typed, validated AgentConfig.
// Option names and defaults are Octavia's, so an image can swap the Python
// agent for this one with the same file. Options this agent adds are marked.
// Pure: text in, config (or a ConfigError naming the option) out.
import ini from 'ini';
import { join } from 'node:path';
import { DEFAULT_RENDER_SETTINGS as D, type RenderSettings } from '../render/settings.js';
import { AgentError } from '../errors.js';

export type ProcessManager = 'auto' | 'direct' | 'systemd';

export interface AgentConfig {
  haproxyAmphora: {
    basePath: string;
    baseCertDir: string;
    bindHost: string;
    bindPort: number;
    haproxyCmd: string;
    /**
     * Size haproxy from this amphora (nbthread/cpu-map, tune.ssl.cachesize),
     * as Octavia 19's controller does from /1.0/details. Off for test hosts,
     * where free memory is a shared machine's, not an amphora's.
     */
    tuneFromAmphoraDetails: boolean;
  };
  healthManager: {
    controllerIpPortList: string[];
    heartbeatInterval: number;
    heartbeatKey: string | null;
  };
  amphoraAgent: {
    agentServerCa: string;
    agentServerCert: string;
    agentServerNetworkDir: string;
    agentRequestReadTimeout: number;
    agentTlsProtocol: 'TLSv1.2' | 'TLSv1.3';
    amphoraId: string | null;
    administrativeLogFacility: number;
    userLogFacility: number;
    /** Added: who runs haproxy: systemd units, the agent itself, or auto (systemd when PID 1 is systemd). */
    processManager: ProcessManager;
    /**
     * Added: the network namespace haproxy and keepalived run in and NICs are
     * plugged into (default amphora-haproxy, Octavia's fixed name). Configured
     * as '', it is null: they run in the agent's own namespace, and plugging
     * is refused (it would rewrite the agent's own routes and firewall).
     */
    networkNamespace: string | null;
    /** Added: the haproxy user/group file (Octavia's image ships it at this path). */
    userGroupFile: string;
    /** Added: where haproxy-<lb>.service units go. */
    systemdUnitDir: string;
    /** Added: hold new members down until their first health checks pass. */
    protectNewMembers: boolean;
    /** Added: seconds a member removed through API 2.0 may keep its sessions before they are closed. */
    memberDrainTimeout: number;
    /** Milliseconds an API 2.0 member call's config files wait to be written (haproxy/apply/deferred-config.ts). */
    memberConfigWriteDelayMs: number;
    /** Added: API 1.0 reloads that only add or change members use haproxy's runtime API instead. */
    runtimeMemberChanges: boolean;
    /** Added: refuse API 1.0 configs that run programs, read files outside the load balancer's directories, open the runtime API... (haproxy/config/policy/haproxy-config.ts). */
    configPolicy: boolean;
    /**
     * Added: a file of additions to the config policy's allow-list, for custom Octavia
     * templates (format: agent/haproxy/config/policy/haproxy-allowed-extension.ts); null: none.
     */
    configPolicyExtension: string | null;
  };
  controllerWorker: {
    loadbalancerTopology: 'SINGLE' | 'ACTIVE_STANDBY';
  };
  /** How specs (API 2.0, `render`) become configs: Octavia's controller-side [haproxy_amphora] options. */
  render: RenderSettings;
  debug: boolean;
}

/** An option of amphora-agent.conf that the agent cannot run with. */
export class ConfigError extends AgentError {
  readonly kind = 'invalid_input';
}

type Section = Record<string, unknown>;

function str(sec: Section | undefined, key: string, def: string): string {
  const v = sec?.[key];
  if (v === undefined || v === null) return def;
  return String(v).trim();
}

function optional(sec: Section | undefined, key: string): string | null {
  const v = str(sec, key, '');
  return v === '' || v === 'None' ? null : v;
}

function int(sec: Section | undefined, name: string, key: string, def: number, min: number, max: number): number {
  const raw = str(sec, key, String(def));
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new ConfigError(`[${name}] ${key}: "${raw}" is not an integer between ${min} and ${max}`);
  }
  return n;
}

function bool(sec: Section | undefined, name: string, key: string, def: boolean): boolean {
  const v = sec?.[key];
  if (v === undefined) return def;
  if (typeof v === 'boolean') return v;
  const s = String(v).trim().toLowerCase();
  if (['true', 'yes', 'on', '1'].includes(s)) return true;
  if (['false', 'no', 'off', '0'].includes(s)) return false;
  throw new ConfigError(`[${name}] ${key}: "${String(v)}" is not a boolean`);
}

function oneOf<T extends string>(sec: Section | undefined, name: string, key: string, def: T, allowed: readonly T[]): T {
  const v = str(sec, key, def);
  if (!(allowed as readonly string[]).includes(v)) {
    throw new ConfigError(`[${name}] ${key}: "${v}" is not one of ${allowed.join(', ')}`);
  }
  return v as T;
}

/** haproxy's size form (10k, 1m): it is written into stick-table lines. */
function stickSize(v: string): string {
  if (!/^[0-9]{1,9}[kmg]?$/i.test(v)) throw new ConfigError(`[haproxy_amphora] haproxy_stick_size: "${v}" is not a size like 10k`);
  return v;
}

/**
 * The 2.0 renderer writes user_log_format into a log-format line, escaping
 * only its spaces: a character haproxy's parser would read otherwise
 * (escapes, quotes, `#` comments, `$` environment variables) is refused.
 */
function logFormat(v: string): string {
  if (!/^[\x20-\x7e]*$/.test(v) || /[\\"'#$]/.test(v)) {
    throw new ConfigError(`[haproxy_amphora] user_log_format: "${v}" has a character haproxy would interpret (\\ " ' # $) or a control character`);
  }
  return v;
}

export function parseAgentConfig(text: string): AgentConfig {
  const doc = ini.parse(text) as Record<string, Section>;
  const ha = doc.haproxy_amphora;
  const hm = doc.health_manager;
  const aa = doc.amphora_agent;
  const cw = doc.controller_worker;
  const basePath = str(ha, 'base_path', '/var/lib/octavia');
  const baseCertDir = str(ha, 'base_cert_dir', '/var/lib/octavia/certs');
  const networkNamespace = str(aa, 'network_namespace', D.networkNamespace ?? '') || null;
  const tls = str(aa, 'agent_tls_protocol', 'TLSv1.2');
  if (!['TLSv1.2', 'TLSv1.3'].includes(tls)) {
    // SSLv3 to TLSv1.1 are Octavia choices too, but insecure: refuse them clearly.
    throw new ConfigError(`[amphora_agent] agent_tls_protocol: "${tls}" is not supported; use TLSv1.2 or TLSv1.3`);
  }
  // Octavia reads the log facilities from [amphora_agent], but its controller's
  // amphora-agent.conf template writes them under [haproxy_amphora], where
  // Octavia's own agent never sees them. Both are honoured, [amphora_agent] first.
  const facility = (key: string, def: number) =>
    aa?.[key] !== undefined ? int(aa, 'amphora_agent', key, def, 0, 7) : int(ha, 'haproxy_amphora', key, def, 0, 7);
  const administrativeLogFacility = facility('administrative_log_facility', 1);
  const userLogFacility = facility('user_log_facility', 0);
  return {
    haproxyAmphora: {
      basePath,
      baseCertDir,
      bindHost: str(ha, 'bind_host', '::'),
      bindPort: int(ha, 'haproxy_amphora', 'bind_port', 9443, 1, 65535),
      haproxyCmd: str(ha, 'haproxy_cmd', '/usr/sbin/haproxy'),
      tuneFromAmphoraDetails: bool(ha, 'haproxy_amphora', 'tune_from_amphora_details', true),
    },
    healthManager: {
      controllerIpPortList: str(hm, 'controller_ip_port_list', '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
      heartbeatInterval: int(hm, 'health_manager', 'heartbeat_interval', 10, 1, 86400),
      heartbeatKey: optional(hm, 'heartbeat_key'),
    },
    amphoraAgent: {
      agentServerCa: str(aa, 'agent_server_ca', '/etc/octavia/certs/client_ca.pem'),
      agentServerCert: str(aa, 'agent_server_cert', '/etc/octavia/certs/server.pem'),
      agentServerNetworkDir: str(aa, 'agent_server_network_dir', '/etc/octavia/interfaces/'),
      agentRequestReadTimeout: int(aa, 'amphora_agent', 'agent_request_read_timeout', 180, 1, 86400),
      agentTlsProtocol: tls as 'TLSv1.2' | 'TLSv1.3',
      amphoraId: optional(aa, 'amphora_id'),
      administrativeLogFacility,
      userLogFacility,
      processManager: oneOf(aa, 'amphora_agent', 'process_manager', 'auto', ['auto', 'direct', 'systemd'] as const),
      networkNamespace,
      userGroupFile: str(aa, 'user_group_file', join(basePath, 'haproxy-default-user-group.conf')),
      systemdUnitDir: str(aa, 'systemd_unit_dir', '/usr/lib/systemd/system'),
      protectNewMembers: bool(aa, 'amphora_agent', 'protect_new_members', true),
      memberDrainTimeout: int(aa, 'amphora_agent', 'member_drain_timeout', 30, 0, 86400),
      memberConfigWriteDelayMs: int(aa, 'amphora_agent', 'member_config_write_delay_ms', 200, 0, 3_600_000),
      runtimeMemberChanges: bool(aa, 'amphora_agent', 'runtime_member_changes', true),
      configPolicy: bool(aa, 'amphora_agent', 'config_policy', true),
      configPolicyExtension: optional(aa, 'config_policy_extension'),
    },
    render: {
      basePath,
      baseCertDir,
      connectionLogging: bool(ha, 'haproxy_amphora', 'connection_logging', D.connectionLogging),
      userLogFormat: logFormat(str(ha, 'user_log_format', D.userLogFormat)),
      userLogFacility,
      administrativeLogFacility,
      timeoutClientData: int(ha, 'haproxy_amphora', 'timeout_client_data', D.timeoutClientData, 0, 2073600000),
      timeoutMemberConnect: int(ha, 'haproxy_amphora', 'timeout_member_connect', D.timeoutMemberConnect, 0, 2073600000),
      timeoutMemberData: int(ha, 'haproxy_amphora', 'timeout_member_data', D.timeoutMemberData, 0, 2073600000),
      timeoutTcpInspect: int(ha, 'haproxy_amphora', 'timeout_tcp_inspect', D.timeoutTcpInspect, 0, 2073600000),
      defaultConnectionLimit: int(ha, 'haproxy_amphora', 'default_connection_limit', D.defaultConnectionLimit, 1, 1000000),
      stickSize: stickSize(str(ha, 'haproxy_stick_size', D.stickSize)),
      networkNamespace,
    },
    controllerWorker: {
      loadbalancerTopology: oneOf(cw, 'controller_worker', 'loadbalancer_topology', 'SINGLE', ['SINGLE', 'ACTIVE_STANDBY'] as const),
    },
    debug: bool(doc.DEFAULT ?? (doc as Section), 'DEFAULT', 'debug', false),
  };
}
