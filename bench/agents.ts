// What bench/api and bench/startup share: the two agents under comparison
// (this one as installed, Octavia's Python agent from python3-octavia's
// `amphora-agent` console script: gunicorn with one worker and the health
// sender process), one configuration text for both, a client for GET
// /1.0/info over mutual TLS, and the resources of a process tree.
import https from 'node:https';
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, readdirSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { issue, makeCa, type Ca, type Issued } from '../test/helpers/certs.js';
import { agentCommand } from '../test/helpers/agent-process.js';

export const AMPHORA = 'b0b0b0b0-0000-4000-8000-000000000001';
export const PYTHON_AGENT = '/usr/bin/amphora-agent';

/** Octavia's agent: python3-octavia's console script (Debian's octavia-agent adds only the unit and config). */
export function ensurePythonAgent(): void {
  try {
    execFileSync('test', ['-x', PYTHON_AGENT]);
  } catch {
    execFileSync('sh', ['-c', 'DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends octavia-agent'], { stdio: 'ignore' });
  }
}

/** Both agents' server certificate, the CA they trust for clients, and the client's TLS options (a controller's). */
export function benchPki(dir: string): { server: Issued; clientCa: Ca; tls: https.AgentOptions } {
  const pki = join(dir, 'pki');
  mkdirSync(pki, { recursive: true });
  const serverCa = makeCa(pki, 'server-ca');
  const clientCa = makeCa(pki, 'client-ca');
  const server = issue(serverCa, 'agent', { dnsName: AMPHORA, usage: 'serverAuth' });
  const client = issue(clientCa, 'controller', { usage: 'clientAuth' });
  return { server, clientCa, tls: { ca: readFileSync(serverCa.cert), cert: readFileSync(client.cert), key: readFileSync(client.key) } };
}

export function configText(dir: string, port: number, serverPem: string, clientCa: string): string {
  return [
    '[DEFAULT]',
    'debug = False',
    '[haproxy_amphora]',
    `base_path = ${join(dir, `lib-${port}`)}`,
    `base_cert_dir = ${join(dir, `lib-${port}`, 'certs')}`,
    'bind_host = 127.0.0.1',
    `bind_port = ${port}`,
    'tune_from_amphora_details = false', // this machine's memory is not an amphora's
    '[health_manager]',
    'controller_ip_port_list =',
    'heartbeat_interval = 3600',
    '[amphora_agent]',
    `agent_server_cert = ${serverPem}`,
    `agent_server_ca = ${clientCa}`,
    `amphora_id = ${AMPHORA}`,
    `agent_server_network_dir = ${join(dir, `interfaces-${port}`)}`,
    'process_manager = direct',
    '',
  ].join('\n');
}

/**
 * argv of each agent, to which the config file's path is appended. With
 * `privateDir`, each runs from its own copy of its interpreter: on an
 * amphora nothing else maps node's or python's pages, while here the bench
 * itself and every other node or python process do, and would take a share
 * of them off the agent's PSS (bench/api measured 28.6 MiB idle that way).
 */
export function agentArgv(privateDir?: string): { ours: string[]; octavia: string[] } {
  let node = process.execPath;
  let python = realpathSync('/usr/bin/python3');
  if (privateDir) {
    node = join(privateDir, 'node');
    copyFileSync(process.execPath, node);
    const copy = join(privateDir, 'python3');
    copyFileSync(python, copy);
    python = copy;
    for (const f of [node, copy]) chmodSync(f, 0o755);
  }
  return { ours: [...agentCommand(node), '--config-file'], octavia: [python, PYTHON_AGENT, '--config-file'] };
}

/** pids of a process and all its descendants. */
export function processTree(pid: number): number[] {
  const parent = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = readStat(Number(name));
    if (stat) parent.set(Number(name), stat.ppid);
  }
  const tree = new Set([pid]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [p, pp] of parent)
      if (tree.has(pp) && !tree.has(p)) {
        tree.add(p);
        grew = true;
      }
  }
  return [...tree];
}

interface Stat {
  ppid: number;
  cpuTicks: number;
  rssPages: number;
}

function readStat(pid: number): Stat | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which is in parentheses and may hold spaces.
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    // utime stime cutime cstime (14-17 in proc(5), here 11-14): the children
    // counted are the ones already waited for, so none is counted twice.
    const cpu = Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
    return { ppid: Number(f[1]), cpuTicks: cpu, rssPages: Number(f[21]) };
  } catch {
    return null;
  }
}

const TICK_MS = 1000 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
const PAGE_KB = Number(execFileSync('getconf', ['PAGESIZE'], { encoding: 'utf8' }).trim()) / 1024;

/** CPU time (ms, including waited-for children such as probes) and resident memory (kB) of a process tree. */
export function treeResources(pid: number): { cpuMs: number; rssKb: number } {
  let ticks = 0;
  let pages = 0;
  for (const p of processTree(pid)) {
    const s = readStat(p);
    if (!s) continue;
    ticks += s.cpuTicks;
    pages += s.rssPages;
  }
  return { cpuMs: ticks * TICK_MS, rssKb: pages * PAGE_KB };
}

/** One GET /1.0/info; resolves with its latency in ms when it answers 200. */
export function getInfo(port: number, tls: https.AgentOptions, agent: https.Agent | false = false): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = https.request({ host: '127.0.0.1', port, path: '/1.0/info', agent, servername: AMPHORA, ...tls }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve(performance.now() - started) : reject(new Error(`status ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * Proportional set size of the tree: shared pages count once across the
 * processes that share them, so forked workers are not counted twice. What
 * the amphora really spends.
 */
export function treePssKb(pid: number): number {
  return treeRollup(pid, ['Pss']);
}

/**
 * Private pages of the tree (USS): a lower bound of what it costs alone. PSS
 * on a shared machine is below what it is on an amphora whenever other
 * processes map the same binary (the bench itself runs node).
 */
export function treeUssKb(pid: number): number {
  return treeRollup(pid, ['Private_Clean', 'Private_Dirty']);
}

function treeRollup(pid: number, fields: string[]): number {
  return processTree(pid).reduce((total, p) => total + rollup(p, fields), 0);
}

/** PSS of one process alone (an agent without the haproxy it supervises). */
export function processPssKb(pid: number): number {
  return rollup(pid, ['Pss']);
}

function rollup(pid: number, fields: string[]): number {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  return fields.reduce((total, f) => total + Number(new RegExp(`^${f}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0), 0);
}
