// bench/api: GET /1.0/info over mutual TLS with 8 concurrent clients, against
// this agent and Octavia's Python agent (Debian's octavia-agent, started in
// the same run with the same certificates and configuration), plus the
// resident memory of each agent's process tree. Prints the ratios.
// Run: sudo npm run bench:api   (installs octavia-agent when missing)
import https from 'node:https';
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { testDir } from '../test/helpers/haproxies.js';
import { agentArgv, benchPki, configText, ensurePythonAgent, getInfo, treePssKb, treeResources, treeUssKb } from './agents.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CLIENTS = 8;

async function waitUp(port: number, tls: https.AgentOptions): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const ok = await getInfo(port, tls).then(
      () => true,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`agent on port ${port} did not answer`);
}

async function measure(port: number, tls: https.AgentOptions): Promise<{ rps: number; p50: number; p99: number; errors: number }> {
  const agent = new https.Agent({ ...tls, keepAlive: true, maxSockets: CLIENTS });
  const latencies: number[] = [];
  let errors = 0;
  const end = Date.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (Date.now() < end) {
        try {
          latencies.push(await getInfo(port, tls, agent));
        } catch {
          errors++;
        }
      }
    }),
  );
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
  return { rps: latencies.length / SECONDS, p50: at(0.5), p99: at(0.99), errors };
}

ensurePythonAgent();
const dir = await testDir('bench-api');
const { server, clientCa, tls } = benchPki(dir);

const agents: { name: string; port: number; proc: ChildProcess }[] = [];
try {
  const commands = agentArgv(dir);
  for (const [name, port, argv] of [
    ['amphora-agent (TypeScript)', 29443, commands.ours],
    ['octavia-agent (Python, Debian)', 29444, commands.octavia],
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
    const idlePssKb = treePssKb(a.proc.pid!);
    const r = await measure(a.port, tls);
    results.push({ ...a, ...r, rssKb: treeResources(a.proc.pid!).rssKb, idlePssKb, pssKb: treePssKb(a.proc.pid!), ussKb: treeUssKb(a.proc.pid!) });
  }
  console.log(`bench/api: GET /1.0/info, mutual TLS, ${CLIENTS} concurrent clients, ${SECONDS} s each`);
  console.log('agent                              req/s     p50 ms   p99 ms   errors   RSS MiB   PSS idle   PSS after load   USS after load (MiB)');
  const mib = (kb: number) => (kb / 1024).toFixed(1).padStart(7);
  for (const r of results) {
    console.log(
      `${r.name.padEnd(34)} ${r.rps.toFixed(0).padStart(6)}   ${r.p50.toFixed(2).padStart(7)}  ${r.p99.toFixed(2).padStart(7)}   ${String(r.errors).padStart(6)}   ${mib(r.rssKb)}   ${mib(r.idlePssKb)}   ${mib(r.pssKb)}   ${mib(r.ussKb)}`,
    );
  }
  const [ts, py] = results as [(typeof results)[0], (typeof results)[0]];
  console.log(
    `ratio: ${(ts.rps / py.rps).toFixed(1)}x the requests per second, ${(ts.rssKb / py.rssKb).toFixed(2)}x the RSS, ` +
      `${(ts.idlePssKb / py.idlePssKb).toFixed(2)}x the PSS idle, ${(ts.pssKb / py.pssKb).toFixed(2)}x the PSS after load, ${(ts.ussKb / py.ussKb).toFixed(2)}x the USS (target: PSS <= 0.5x)`,
  );
} finally {
  for (const a of agents) a.proc.kill('SIGTERM');
}
