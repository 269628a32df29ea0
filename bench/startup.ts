// bench/startup: cold start of an agent to its first 200 on GET /1.0/info
// (mutual TLS, a new connection for every try, tried every 10 ms from the
// moment the process is spawned), for this agent and for Octavia's Python
// agent on the same machine in the same run, with the same certificates and
// configuration. Each round starts each agent once, in turns; the table gives
// medians over the rounds of the wall time, the CPU time its process tree
// used until then (children it waited for, such as the haproxy probes,
// included) and the tree's resident memory at that moment.
// It ends with what each runtime dependency costs to import in a fresh node
// (CPU and RSS, median of 3), which is what lazy loading saves.
// Run: sudo npm run bench:startup   (BENCH_ROUNDS=5 by default)
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { testDir } from '../test/helpers/haproxies.js';
import { agentArgv, benchPki, configText, ensurePythonAgent, getInfo, processTree, treeResources } from './agents.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const TIMEOUT_MS = 120_000;

interface Start {
  wallMs: number;
  cpuMs: number;
  rssKb: number;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function coldStart(argv: readonly string[], conf: string, port: number, tls: object, fresh: string[]): Promise<Start> {
  for (const d of fresh) rmSync(d, { recursive: true, force: true });
  const started = performance.now();
  // Its own process group, so the whole tree (gunicorn's worker, the health sender) is stopped after.
  const proc = spawn(argv[0]!, [...argv.slice(1), conf], { stdio: 'ignore', detached: true, env: { ...process.env, AMPHORA_AGENT_LOG_LEVEL: 'warn' } });
  try {
    for (;;) {
      if (proc.exitCode !== null) throw new Error(`${argv.join(' ')} exited with ${proc.exitCode} before answering`);
      const ok = await getInfo(port, tls).then(
        () => true,
        () => false,
      );
      if (ok) {
        const wallMs = performance.now() - started;
        return { wallMs, ...treeResources(proc.pid!) };
      }
      if (performance.now() - started > TIMEOUT_MS) throw new Error(`${argv.join(' ')} did not answer within ${TIMEOUT_MS} ms`);
      await new Promise((r) => setTimeout(r, 10));
    }
  } finally {
    const tree = processTree(proc.pid!);
    const exited = new Promise((r) => (proc.exitCode !== null ? r(null) : proc.once('exit', r)));
    try {
      process.kill(-proc.pid!, 'SIGKILL');
    } catch {
      /* already gone */
    }
    for (const p of tree)
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        /* gone */
      }
    await exited;
  }
}

ensurePythonAgent();
const dir = await testDir('bench-startup');
const { server, clientCa, tls } = benchPki(dir);

const commands = agentArgv();
const agents = [
  { name: 'amphora-agent (TypeScript)', port: 29453, argv: commands.ours, runs: [] as Start[] },
  { name: 'octavia-agent (Python, Octavia 11)', port: 29454, argv: commands.octavia, runs: [] as Start[] },
];
for (const a of agents) writeFileSync(join(dir, `agent-${a.port}.conf`), configText(dir, a.port, server.pem, clientCa.cert));

// One round to warm the page cache for both, not counted: "cold" is the process, not the disk.
for (let round = -1; round < ROUNDS; round++) {
  for (const a of agents) {
    // A first boot: no state from the previous round (interface files, the agent's base directory).
    const fresh = [join(dir, `lib-${a.port}`), join(dir, `interfaces-${a.port}`)];
    const r = await coldStart(a.argv, join(dir, `agent-${a.port}.conf`), a.port, tls, fresh);
    if (round >= 0) a.runs.push(r);
  }
}

console.log(`bench/startup: spawn to the first 200 on GET /1.0/info (mutual TLS), median of ${ROUNDS} cold starts each`);
console.log('agent                                 start ms   CPU ms   RSS MiB   (min-max start ms)');
for (const a of agents) {
  const wall = a.runs.map((r) => r.wallMs);
  console.log(
    `${a.name.padEnd(36)} ${median(wall).toFixed(0).padStart(8)} ${median(a.runs.map((r) => r.cpuMs))
      .toFixed(0)
      .padStart(8)}` +
      ` ${(median(a.runs.map((r) => r.rssKb)) / 1024).toFixed(1).padStart(9)}   (${Math.min(...wall).toFixed(0)}-${Math.max(...wall).toFixed(0)})`,
  );
}
const [ts, py] = agents as [(typeof agents)[0], (typeof agents)[0]];
const ratio = median(ts.runs.map((r) => r.wallMs)) / median(py.runs.map((r) => r.wallMs));
const cpuRatio = median(ts.runs.map((r) => r.cpuMs)) / median(py.runs.map((r) => r.cpuMs));
console.log(`ratio: ${ratio.toFixed(2)}x Octavia's start time, ${cpuRatio.toFixed(2)}x its CPU time (target: <= 0.5x)`);

// What each runtime dependency costs to import, each in a fresh node.
const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const deps = Object.keys((JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies);
const probe = (what: string) => `const c0 = process.cpuUsage(), r0 = process.memoryUsage().rss;
${what === '' ? 'Promise.resolve()' : `import(${JSON.stringify(what)})`}.then(() => { const c = process.cpuUsage(c0);
console.log(JSON.stringify({ cpuMs: (c.user + c.system) / 1000, rssKb: (process.memoryUsage().rss - r0) / 1024 })); });`;
console.log('\nimport cost of each dependency (fresh node, median of 3):');
const serveModules = join(REPO, 'dist', 'agent', 'cli', 'serve.js');
for (const [label, dep] of [...deps.map((d) => [d, d]), ['(serve, all)', serveModules]] as [string, string][]) {
  const runs = [0, 1, 2].map(
    () =>
      JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', probe(dep)], { cwd: REPO, encoding: 'utf8' })) as {
        cpuMs: number;
        rssKb: number;
      },
  );
  console.log(
    `  ${label.padEnd(14)} ${median(runs.map((r) => r.cpuMs))
      .toFixed(0)
      .padStart(5)} ms CPU ${(median(runs.map((r) => r.rssKb)) / 1024).toFixed(1).padStart(6)} MiB`,
  );
}
