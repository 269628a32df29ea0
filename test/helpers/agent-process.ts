// A real agent process (`amphora-agent --config-file ...`) with test
// certificates, a test namespace and one of the haproxy binaries, as an
// Octavia worker would meet it on an amphora.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadBalancerFiles } from '../../agent/haproxy/layout.js';
import * as assert from 'uvu/assert';
import { currentWorker, masterCommand, parseShowProc, workerCommand, type ProcessTable } from '../../agent/haproxy/process/master-cli.js';
import { parseServerState } from '../../agent/haproxy/config/server-state.js';
import { issue, makeCa, type Ca, type Issued } from './certs.js';
import type { HaproxyUnderTest } from './haproxies.js';
import { waitFor, type LoadGenerator } from './load.js';

const MAIN = fileURLToPath(new URL('../../agent/main.js', import.meta.url));

/**
 * The agent's command as installed: node with the flags of main.js's first
 * line (its memory settings; the image's wrapper passes the same), then main.js.
 * AGENT_NODE_FLAGS replaces those flags, for benches that weigh other ones.
 */
export function agentCommand(node = process.execPath): string[] {
  const first = readFileSync(MAIN, 'utf8').split('\n')[0]!;
  const flags = process.env.AGENT_NODE_FLAGS ?? first;
  return [node, ...flags.split(/\s+/).filter((w) => w.startsWith('--')), MAIN];
}

export interface AgentUnderTest {
  process: ChildProcess;
  port: number;
  amphoraId: string;
  basePath: string;
  certDir: string;
  configFile: string;
  /** CA that signs the agent's server certificate (the controller's server_ca). */
  serverCa: Ca;
  /** CA the agent trusts for clients, and the controller's client certificate. */
  clientCa: Ca;
  client: Issued;
  /** The command line it runs (launcher included): restartAgent runs it again. */
  argv: string[];
  output(): string;
  stop(): Promise<void>;
}

/** Several agents on one machine: each its own amphora id and API address; `sections`: more INI lines at the end. */
export interface AgentOptions {
  amphoraId?: string;
  bindHost?: string;
  sections?: string[];
}

/**
 * `healthManager`: lines for [health_manager] (default: no heartbeat
 * destinations); `amphoraAgent`: more lines for [amphora_agent]; `launcher`:
 * argv the agent's command is appended to (for example a mount namespace
 * with the amphora's /etc/tuned); it must exec the command, so signals reach the agent.
 */
export async function startAgent(
  h: HaproxyUnderTest,
  dir: string,
  netns: string,
  port: number,
  healthManager: string[] = ['controller_ip_port_list ='],
  amphoraAgent: string[] = [],
  launcher: string[] = [],
  more: AgentOptions = {},
): Promise<AgentUnderTest> {
  const amphoraId = more.amphoraId ?? 'a1b2c3d4-0000-4000-8000-000000000001';
  const pki = join(dir, 'pki');
  mkdirSync(pki, { recursive: true });
  const serverCa = makeCa(pki, 'server-ca');
  const clientCa = makeCa(pki, 'client-ca');
  const server = issue(serverCa, 'agent', { dnsName: amphoraId, usage: 'serverAuth' });
  const client = issue(clientCa, 'controller', { usage: 'clientAuth' });
  const basePath = join(dir, 'lib');
  const certDir = join(basePath, 'certs');
  const configFile = join(dir, 'amphora-agent.conf');
  writeFileSync(
    configFile,
    [
      '[haproxy_amphora]',
      `base_path = ${basePath}`,
      `base_cert_dir = ${certDir}`,
      `bind_host = ${more.bindHost ?? '127.0.0.1'}`,
      `bind_port = ${port}`,
      `haproxy_cmd = ${h.command.join(' ')}`,
      // This shared machine's free memory would give a TLS listener a session cache of gigabytes.
      'tune_from_amphora_details = false',
      '[health_manager]',
      ...healthManager,
      '[amphora_agent]',
      `agent_server_cert = ${server.pem}`,
      `agent_server_ca = ${clientCa.cert}`,
      `amphora_id = ${amphoraId}`,
      'process_manager = direct',
      `network_namespace = ${netns}`,
      `agent_server_network_dir = ${join(dir, 'interfaces')}`,
      `systemd_unit_dir = ${join(dir, 'units')}`,
      ...amphoraAgent,
      ...(more.sections ?? []),
      '',
    ].join('\n'),
  );
  const argv = [...launcher, ...agentCommand(), '--config-file', configFile];
  return { port, amphoraId, basePath, certDir, configFile, serverCa, clientCa, client, argv, ...(await launch(argv)) };
}

/** The same agent (config, certificates, launcher) started again after it stopped, as its service would restart it. */
export async function restartAgent(agent: AgentUnderTest): Promise<AgentUnderTest> {
  return { ...agent, ...(await launch(agent.argv)) };
}

async function launch(argv: string[]): Promise<Pick<AgentUnderTest, 'process' | 'output' | 'stop'>> {
  let out = '';
  // Info level: readiness is read from the "API listening" log line.
  const child = spawn(argv[0]!, argv.slice(1), {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, AMPHORA_AGENT_LOG_LEVEL: 'info' },
  });
  child.stdout!.on('data', (d) => {
    out += d;
  });
  child.stderr!.on('data', (d) => {
    out += d;
  });
  await waitFor('the agent to listen', () => out.includes('API listening') || child.exitCode !== null, 30_000);
  if (child.exitCode !== null) throw new Error(`agent exited: ${out}`);
  return {
    process: child,
    output: () => out,
    async stop() {
      // A killed agent (signalCode set) has exited already: waiting for 'exit' would never end.
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      }
    },
  };
}

/**
 * A load balancer's haproxy as an agent under test runs it: its files as
 * the agent lays them out (agent/haproxy/layout.ts), and through the master
 * socket its process table and its servers.
 */
export function agentHaproxy(agent: Pick<AgentUnderTest, 'basePath'>, lbId: string) {
  const files = loadBalancerFiles(agent.basePath, lbId);
  const socket = files.masterSocket;
  const servers = async (backend?: string) =>
    parseServerState(await workerCommand(socket, backend ? `show servers state ${backend}` : 'show servers state')).entries;
  return {
    files,
    socket,
    processes: async () => parseShowProc(await masterCommand(socket, 'show proc'))!,
    servers,
    server: async (name: string) => (await servers()).find((e) => e.server === name),
  };
}

/** Changes made while `load` ran went through the runtime API: no reload since `before`, the same worker, not one failed request. */
export function assertServedWithoutReload(before: ProcessTable, after: ProcessTable, load: LoadGenerator): void {
  assert.is(after.reloads, before.reloads, 'the master reloaded');
  assert.is(currentWorker(after), currentWorker(before), 'another worker serves');
  assert.is(load.failures.length, 0, `failed requests: ${load.describeFailures()}`);
  assert.ok(load.records.length > 100, `${load.records.length} requests`);
}
