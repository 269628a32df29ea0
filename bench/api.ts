// bench/api: GET /1.0/info over mutual TLS with 8 concurrent clients, against
// this agent and Octavia's Python agent (Debian's octavia-agent, started in
// the same run with the same certificates and configuration), plus the
// resident memory of each agent's process tree. Prints the ratios.
// Run: sudo npm run bench:api   (installs octavia-agent when missing)
import https from 'node:https';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { issue, makeCa } from '../test/helpers/certs.js';
import { testDir } from '../test/helpers/haproxies.js';

const MAIN = fileURLToPath(new URL('../agent/main.js', import.meta.url));
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CLIENTS = 8;
const AMPHORA = 'b0b0b0b0-0000-4000-8000-000000000001';

function ensurePythonAgent(): void {
  try {
    execFileSync('test', ['-x', '/usr/bin/amphora-agent']);
  } catch {
    execFileSync('sh', ['-c', 'DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends octavia-agent'], { stdio: 'ignore' });
  }
}

function configText(dir: string, port: number, serverPem: string, clientCa: string): string {
  return [
    '[DEFAULT]', 'debug = False', '[haproxy_amphora]', `base_path = ${join(dir, `lib-${port}`)}`,
    `base_cert_dir = ${join(dir, `lib-${port}`, 'certs')}`, 'bind_host = 127.0.0.1', `bind_port = ${port}`,
    'tune_from_amphora_details = false', // this machine's memory is not an amphora's
    '[health_manager]', 'controller_ip_port_list =', 'heartbeat_interval = 3600',
    '[amphora_agent]', `agent_server_cert = ${serverPem}`, `agent_server_ca = ${clientCa}`, `amphora_id = ${AMPHORA}`,
    `agent_server_network_dir = ${join(dir, `interfaces-${port}`)}`, 'process_manager = direct', '',
  ].join('\n');
}

/** The node flags of main.js's shebang line: the agent runs here exactly as installed. */
function shebangFlags(): string[] {
  const first = readFileSync(MAIN, 'utf8').split('\n')[0]!;
  return first.split(/\s+/).filter((w) => w.startsWith('--'));
}

/** The whole process tree: the Python agent is a gunicorn master, a worker and a health sender. */
function processTree(pid: number): { pid: number; rss: number }[] {
  const out = execFileSync('ps', ['-e', '-o', 'pid=,ppid=,rss='], { encoding: 'utf8' });
  const rows = out.trim().split('\n').map((l) => l.trim().split(/\s+/).map(Number)) as [number, number, number][];
  const tree = new Set([pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const [p, pp] of rows) if (tree.has(pp) && !tree.has(p)) { tree.add(p); grew = true; }
  }
  return rows.filter(([p]) => tree.has(p)).map(([p, , rss]) => ({ pid: p, rss }));
}

function rssKb(pid: number): number {
  return processTree(pid).reduce((s, p) => s + p.rss, 0);
}

/**
 * Proportional set size of the tree: shared pages count once across the
 * processes that share them, so forked workers are not counted twice. What
 * the amphora really spends.
 */
function pssKb(pid: number): number {
  let total = 0;
  for (const p of processTree(pid)) {
    const rollup = readFileSync(`/proc/${p.pid}/smaps_rollup`, 'utf8');
    total += Number(/^Pss:\s+(\d+) kB/m.exec(rollup)?.[1] ?? 0);
  }
  return total;
}

async function waitUp(port: number, tls: https.AgentOptions): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const ok = await once(port, tls, new https.Agent(tls)).then(() => true, () => false);
    if (ok) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`agent on port ${port} did not answer`);
}

function once(port: number, tls: https.AgentOptions, agent: https.Agent): Promise<number> {
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

async function measure(port: number, tls: https.AgentOptions): Promise<{ rps: number; p50: number; p99: number; errors: number }> {
  const agent = new https.Agent({ ...tls, keepAlive: true, maxSockets: CLIENTS });
  const latencies: number[] = [];
  let errors = 0;
  const end = Date.now() + SECONDS * 1000;
  await Promise.all(Array.from({ length: CLIENTS }, async () => {
    while (Date.now() < end) {
      try {
        latencies.push(await once(port, tls, agent));
      } catch {
        errors++;
      }
    }
  }));
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
  return { rps: latencies.length / SECONDS, p50: at(0.5), p99: at(0.99), errors };
}

ensurePythonAgent();
const dir = await testDir('bench-api');
const pki = join(dir, 'pki');
mkdirSync(pki, { recursive: true });
const serverCa = makeCa(pki, 'server-ca');
const clientCa = makeCa(pki, 'client-ca');
const server = issue(serverCa, 'agent', { dnsName: AMPHORA, usage: 'serverAuth' });
const client = issue(clientCa, 'controller', { usage: 'clientAuth' });
const tls = { ca: readFileSync(serverCa.cert), cert: readFileSync(client.cert), key: readFileSync(client.key) };

const agents: { name: string; port: number; proc: ChildProcess }[] = [];
try {
  for (const [name, port, argv] of [
    ['amphora-agent (TypeScript)', 29443, [process.execPath, ...shebangFlags(), MAIN, '--config-file']],
    ['octavia-agent (Python, Debian)', 29444, ['/usr/bin/amphora-agent', '--config-file']],
  ] as const) {
    const conf = join(dir, `agent-${port}.conf`);
    writeFileSync(conf, configText(dir, port, server.pem, clientCa.cert));
    const proc = spawn(argv[0], [...argv.slice(1), conf], { stdio: 'ignore', env: { ...process.env, AMPHORA_AGENT_LOG_LEVEL: 'warn' } });
    agents.push({ name, port, proc });
    await waitUp(port, tls);
  }
  const results = [];
  await new Promise((r) => setTimeout(r, 2000)); // both settled after their first answers
  for (const a of agents) {
    const idlePssKb = pssKb(a.proc.pid!);
    const r = await measure(a.port, tls);
    results.push({ ...a, ...r, rssKb: rssKb(a.proc.pid!), idlePssKb, pssKb: pssKb(a.proc.pid!) });
  }
  console.log(`bench/api: GET /1.0/info, mutual TLS, ${CLIENTS} concurrent clients, ${SECONDS} s each`);
  console.log('agent                              req/s     p50 ms   p99 ms   errors   RSS MiB   PSS idle   PSS after load (MiB)');
  const mib = (kb: number) => (kb / 1024).toFixed(1).padStart(7);
  for (const r of results) {
    console.log(`${r.name.padEnd(34)} ${r.rps.toFixed(0).padStart(6)}   ${r.p50.toFixed(2).padStart(7)}  ${r.p99.toFixed(2).padStart(7)}   ${String(r.errors).padStart(6)}   ${mib(r.rssKb)}   ${mib(r.idlePssKb)}   ${mib(r.pssKb)}`);
  }
  const [ts, py] = results as [typeof results[0], typeof results[0]];
  console.log(`ratio: ${(ts.rps / py.rps).toFixed(1)}x the requests per second, ${(ts.rssKb / py.rssKb).toFixed(2)}x the RSS, ` +
    `${(ts.idlePssKb / py.idlePssKb).toFixed(2)}x the PSS idle, ${(ts.pssKb / py.pssKb).toFixed(2)}x the PSS after load (target: <= 0.5x)`);
} finally {
  for (const a of agents) a.proc.kill('SIGTERM');
}
