// Which options of amphora-agent.conf a PUT /1.0/config may change, and the
// merge that keeps the amphora's own values of the others.
//
// Whoever holds the controller's client certificate can PUT a whole new file.
// Options that name a program, a path the agent reads secrets or trust from or
// writes to, the namespace tenants' haproxy runs in, or the config policy
// would turn that into root on the amphora: with config_policy off and
// agent_server_cert repointed, PUT /1.0/certificate wrote any text to any
// path. Those keep the amphora's values. Octavia's controller renders the
// same file from the same options the amphora booted with (its config drive
// comes from the same AgentJinjaTemplater), so it sends the same values there,
// and a PUT that differs is still taken for everything else: the controller
// keeps working, and the answer names the options that were kept.
// Pure: texts in, text out.
import ini from 'ini';
import { isDeepStrictEqual } from 'node:util';
import { ConfigError, parseAgentConfig, type AgentConfig } from './agent-config.js';

type Section = Record<string, unknown>;

/** One option agent-config.ts reads: whether a PUT keeps the amphora's value, and why. */
export interface OptionClass {
  section: string;
  key: string;
  kept: boolean;
  why: string;
  /** Its value as the agent uses it (compared to tell a real difference from a different spelling). */
  value?: (c: AgentConfig) => unknown;
}

const kept = (section: string, key: string, why: string, value: (c: AgentConfig) => unknown): OptionClass => ({ section, key, kept: true, why, value });
const taken = (section: string, key: string, why: string): OptionClass => ({ section, key, kept: false, why });

/** Every option agent-config.ts reads (test/unit/config-protected.test.ts checks that none is missing). */
export const OPTION_CLASSES: readonly OptionClass[] = [
  taken('DEFAULT', 'debug', 'log verbosity'),
  kept('haproxy_amphora', 'base_path', "every load balancer's files are written under it", (c) => c.haproxyAmphora.basePath),
  kept('haproxy_amphora', 'base_cert_dir', 'certificates and keys are written and read under it', (c) => c.haproxyAmphora.baseCertDir),
  taken('haproxy_amphora', 'bind_host', 'the management address the API listens on (read at start)'),
  taken('haproxy_amphora', 'bind_port', 'the API port (read at start)'),
  kept('haproxy_amphora', 'haproxy_cmd', 'the program run as root', (c) => c.haproxyAmphora.haproxyCmd),
  taken('haproxy_amphora', 'tune_from_amphora_details', "sizing of the 2.0 renderer's configs"),
  taken('haproxy_amphora', 'user_log_facility', 'a syslog facility number 0-7'),
  taken('haproxy_amphora', 'administrative_log_facility', 'a syslog facility number 0-7'),
  taken('haproxy_amphora', 'connection_logging', '2.0 renderer setting'),
  kept('haproxy_amphora', 'user_log_format', 'written into haproxy configs as is (sample fetches); Octavia never sends it', (c) => c.render.userLogFormat),
  taken('haproxy_amphora', 'timeout_client_data', '2.0 renderer setting'),
  taken('haproxy_amphora', 'timeout_member_connect', '2.0 renderer setting'),
  taken('haproxy_amphora', 'timeout_member_data', '2.0 renderer setting'),
  taken('haproxy_amphora', 'timeout_tcp_inspect', '2.0 renderer setting'),
  taken('haproxy_amphora', 'default_connection_limit', '2.0 renderer setting'),
  taken('haproxy_amphora', 'haproxy_stick_size', '2.0 renderer setting (a checked size)'),
  taken('health_manager', 'controller_ip_port_list', 'where heartbeats go: what update_amphora_agent_config is for'),
  taken('health_manager', 'heartbeat_interval', 'heartbeat timing'),
  taken('health_manager', 'heartbeat_key', 'the heartbeat HMAC key the controller rotates'),
  kept('amphora_agent', 'agent_server_ca', 'the CA the API trusts for clients', (c) => c.amphoraAgent.agentServerCa),
  kept('amphora_agent', 'agent_server_cert', "the API's key; PUT /1.0/certificate writes it", (c) => c.amphoraAgent.agentServerCert),
  kept('amphora_agent', 'agent_server_network_dir', 'interface files are written there and run by `interface up`', (c) => c.amphoraAgent.agentServerNetworkDir),
  taken('amphora_agent', 'agent_request_read_timeout', 'API timing'),
  taken('amphora_agent', 'agent_tls_protocol', "the API's minimum TLS version, TLSv1.2 or TLSv1.3 only"),
  taken('amphora_agent', 'amphora_id', 'the id heartbeats carry, not used in paths'),
  taken('amphora_agent', 'user_log_facility', 'a syslog facility number 0-7'),
  taken('amphora_agent', 'administrative_log_facility', 'a syslog facility number 0-7'),
  kept('amphora_agent', 'process_manager', 'which program runs haproxy and keepalived (systemctl or the agent)', (c) => c.amphoraAgent.processManager),
  kept('amphora_agent', 'network_namespace', "where tenants' haproxy and keepalived run and NICs are plugged", (c) => c.amphoraAgent.networkNamespace),
  kept('amphora_agent', 'user_group_file', 'a file haproxy reads, written by the agent', (c) => c.amphoraAgent.userGroupFile),
  kept('amphora_agent', 'systemd_unit_dir', 'units are written there and run by systemd as root', (c) => c.amphoraAgent.systemdUnitDir),
  taken('amphora_agent', 'protect_new_members', 'member handling'),
  taken('amphora_agent', 'member_drain_timeout', 'member handling'),
  taken('amphora_agent', 'member_config_write_delay_ms', 'member handling'),
  taken('amphora_agent', 'runtime_member_changes', 'member handling'),
  kept('amphora_agent', 'config_policy', 'the config policy switch', (c) => c.amphoraAgent.configPolicy),
  kept('amphora_agent', 'config_policy_extension', "the config policy's allow-list additions", (c) => c.amphoraAgent.configPolicyExtension),
  taken('controller_worker', 'loadbalancer_topology', "SINGLE or ACTIVE_STANDBY, the controller's to decide"),
];

/** [amphora_agent] options named so (the policy switch and its extensions, present and future) are all kept. */
const POLICY_PREFIX = 'config_policy';

const KEPT = OPTION_CLASSES.filter((o) => o.kept);

function section(doc: Section, name: string): Section | undefined {
  const s = doc[name];
  return s !== null && typeof s === 'object' && !Array.isArray(s) ? (s as Section) : undefined;
}

/** The kept options of both files: the fixed list, and every config_policy* key either one has. */
function keptKeys(own: Section, sent: Section): { section: string; key: string; value?: (c: AgentConfig) => unknown }[] {
  const listed = new Set(KEPT.map((o) => `${o.section} ${o.key}`));
  const policy = [...Object.keys(section(own, 'amphora_agent') ?? {}), ...Object.keys(section(sent, 'amphora_agent') ?? {})].filter(
    (k) => k.startsWith(POLICY_PREFIX) && !listed.has(`amphora_agent ${k}`),
  );
  return [...KEPT, ...[...new Set(policy)].map((key) => ({ section: 'amphora_agent', key }))];
}

const raw = (doc: Section, sec: string, key: string): string | undefined => {
  const v = section(doc, sec)?.[key];
  return v === undefined ? undefined : JSON.stringify(v);
};

function parsed(text: string): AgentConfig | null {
  try {
    return parseAgentConfig(text);
  } catch {
    return null;
  }
}

export interface Merged {
  /** The file to store: the sent one with the amphora's values of the kept options. */
  text: string;
  config: AgentConfig;
  /** Kept options the sent file set to something else, as "[section] key". */
  kept: string[];
}

type KeptKey = ReturnType<typeof keptKeys>[number];

/** `key = value` lines as ini reads them back (arrays as `key[] = ...`, one line each). */
function lines(key: string, value: unknown): string[] {
  return Array.isArray(value) ? value.map((v) => `${ini.safe(`${key}[]`)} = ${ini.safe(String(v))}`) : [`${ini.safe(key)} = ${ini.safe(String(value))}`];
}

/**
 * The sent text with the lines setting `keys` dropped, and the
 * amphora's lines added under the first header of their section: the
 * controller's file stays readable as it wrote it. Lines are read with ini's
 * own rules (its header and `key = value` patterns, unquoted keys, `key[]`).
 */
function editLines(sent: string, keys: KeptKey[], ownDoc: Section): string {
  const isKept = new Set(keys.map((k) => `${k.section} ${k.key}`));
  const mine = new Map<string, string[]>();
  for (const { section: sec, key } of keys) {
    const v = section(ownDoc, sec)?.[key];
    if (v !== undefined) mine.set(sec, [...(mine.get(sec) ?? []), ...lines(key, v)]);
  }
  const out: string[] = [];
  let current: string | null = null;
  for (const line of sent.split(/\r\n|\r|\n/)) {
    const header = /^\[([^\]]*)\]\s*$/.exec(line);
    if (header) {
      current = ini.unsafe(header[1]!);
      out.push(line, ...(mine.get(current) ?? []));
      mine.delete(current);
      continue;
    }
    const pair = /^\s*[;#]/.test(line) ? null : /^([^=]+)(=(.*))?$/.exec(line);
    const key = pair ? ini.unsafe(pair[1]!).replace(/\[\]$/, '') : null;
    if (current !== null && key !== null && isKept.has(`${current} ${key}`)) continue;
    out.push(line);
  }
  const added = [...mine].flatMap(([sec, own]) => [`[${ini.safe(sec)}]`, ...own]);
  if (added.length > 0 && out[out.length - 1] === '') out.pop();
  return [...out, ...added, ...(added.length > 0 ? [''] : [])].join('\n');
}

/** The sent file rewritten whole from its parsed form: for shapes the line edit cannot keep (dotted sections...). */
function rewrite(sentDoc: Section, keys: KeptKey[], ownDoc: Section): string {
  const doc = structuredClone(sentDoc);
  for (const { section: sec, key } of keys) {
    delete section(doc, sec)?.[key];
    const v = section(ownDoc, sec)?.[key];
    if (v === undefined) continue;
    const target = section(doc, sec) ?? {};
    doc[sec] = target;
    target[key] = v;
  }
  return ini.stringify(doc, { whitespace: true });
}

/** `text` read as the agent reads it; throws ConfigError unless every kept option has the amphora's value. */
function readBack(text: string, keys: KeptKey[], own: { doc: Section; config: AgentConfig }): AgentConfig {
  const config = parseAgentConfig(text);
  const doc = ini.parse(text) as Section;
  for (const { section: sec, key, value } of keys) {
    const same = value ? isDeepStrictEqual(value(config), value(own.config)) : raw(doc, sec, key) === raw(own.doc, sec, key);
    if (!same) throw new ConfigError(`[${sec}] ${key}: the configuration sets it in a form the agent cannot keep the amphora's value in`);
  }
  return config;
}

/**
 * `sent` with every kept option as in `own` (set as there, or unset as there).
 * Throws ConfigError when the result is not a configuration the agent runs with.
 */
export function keepAmphoraValues(own: string, sent: string): Merged {
  const ownDoc = ini.parse(own) as Section;
  const sentDoc = ini.parse(sent) as Section;
  const ownConfig = parseAgentConfig(own);
  const sentConfig = parsed(sent);
  const keys = keptKeys(ownDoc, sentDoc);
  const kept: string[] = [];
  for (const { section: sec, key, value } of keys) {
    if (!(key in (section(sentDoc, sec) ?? {}))) continue;
    // A different spelling of the same value (True/true, a default written out) is no difference.
    const same = value && sentConfig ? isDeepStrictEqual(value(sentConfig), value(ownConfig)) : raw(sentDoc, sec, key) === raw(ownDoc, sec, key);
    if (!same) kept.push(`[${sec}] ${key}`);
  }
  // The sent file as it is when it has the amphora's values already (Octavia's
  // controller renders the same template the amphora booted with), else edited
  // line by line, else rewritten whole; each read back before it is taken.
  const differing = keys.filter(({ section: sec, key }) => raw(sentDoc, sec, key) !== raw(ownDoc, sec, key));
  const candidates = differing.length === 0 ? [() => sent] : [() => editLines(sent, differing, ownDoc), () => rewrite(sentDoc, keys, ownDoc)];
  let refusal: unknown;
  for (const make of candidates) {
    const text = make();
    try {
      return { text, config: readBack(text, keys, { doc: ownDoc, config: ownConfig }), kept };
    } catch (err) {
      refusal = err;
    }
  }
  throw refusal;
}
