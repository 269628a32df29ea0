// The README's quick start and its walkthrough (docs/walkthrough.md, which
// goes on in the same terminals), run as they are written, on what a fresh
// clone has (the repository's files, without node_modules, dist or
// .amphora-dev): every ```sh block marked `<!-- quickstart: terminal N -->`,
// the README's first, runs in that "terminal", terminal 1 (`npm ci && sudo
// npm start`) and 2 (the members) as long-running processes, terminal 3 as
// one shell session, and each command's output is compared with the `# `
// lines under it: durations and check counts aside, in any order (round
// robin may start at either member; requests in flight finish together).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loud } from '../helpers/hooks.js';
import { testDir } from '../helpers/haproxies.js';
import { waitFor } from '../helpers/load.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
/** Not 9443: a developer's own agent may run there. */
const PORT = '19447';
/** The development VIPs' local routes (one /32 per address haproxy binds). */
const devVipRoutes = () =>
  execFileSync('ip', ['route', 'show', 'table', 'local', 'root', '203.0.113.0/24'], { encoding: 'utf8' })
    .split('\n')
    .map((l) => /^local (203\.0\.113\.\d+) /.exec(l)?.[1])
    .filter((a): a is string => a !== undefined);

interface Step {
  command: string;
  expected: string[];
}
interface Block {
  terminal: number;
  steps: Step[];
}

function markedBlocks(readme: string): Block[] {
  const blocks: Block[] = [];
  for (const m of readme.matchAll(/<!-- quickstart: terminal (\d) -->\s*```sh\n([\s\S]*?)```/g)) {
    const steps: Step[] = [];
    for (const line of m[2]!.split('\n')) {
      if (line.startsWith('#')) steps.at(-1)!.expected.push(line.replace(/^# ?/, ''));
      else if (line.trim() !== '') steps.push({ command: line, expected: [] });
    }
    blocks.push({ terminal: Number(m[1]), steps });
  }
  return blocks;
}

/** What may differ between runs: durations, check counts, column alignment; and the order of lines. */
function normalized(lines: string[]): string[] {
  return lines
    .map((l) =>
      l
        .trim()
        .replace(/\s+/g, ' ')
        .replace(/after \d+\.\d s/, 'after N s')
        .replace(/\d+ checks/, 'N checks'),
    )
    .filter((l) => l !== '')
    .sort();
}

const env = {
  ...process.env,
  AMPHORA_AGENT_DEV_PORT: PORT,
  // The packages are in npm's cache from this checkout's own `npm ci`.
  npm_config_prefer_offline: 'true',
  npm_config_audit: 'false',
  npm_config_fund: 'false',
  npm_config_update_notifier: 'false',
};
// The documents say `sudo`; the tests run as root, where sudo may not be installed.
const SUDO = 'sudo() { "$@"; }\n';

/** The README's quick start, then the walkthrough that continues it. */
const blocks = ['README.md', 'docs/walkthrough.md'].flatMap((doc) => markedBlocks(readFileSync(join(REPO, doc), 'utf8')));
const byTerminal = (n: number) => blocks.filter((b) => b.terminal === n).flatMap((b) => b.steps);
let clone = '';
let routesBefore: string[] = [];
const terminals: { name: string; child: ChildProcess; output: string }[] = [];
/** Terminal 3: each step's output and exit status, in document order. */
let results: { step: Step; output: string[]; status: number }[] = [];

function terminal(name: string, script: string): (typeof terminals)[number] {
  // Its own process group, so the whole terminal (npm, the agent, curl jobs) is stopped at the end.
  const child = spawn('bash', ['-c', `exec 2>&1\n${SUDO}${script}`], { cwd: clone, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const t = { name, child, output: '' };
  child.stdout!.on('data', (d) => {
    t.output += d;
  });
  terminals.push(t);
  return t;
}

test.before(
  loud(async () => {
    assert.equal(blocks.map((b) => b.terminal).slice(0, 3), [1, 2, 3], 'README: terminal 1, 2 and 3 blocks of the quick start');
    routesBefore = devVipRoutes();
    // A fresh clone: the files git has (committed or about to be), nothing built.
    clone = join(await testDir('quickstart'), 'amphora-agent');
    execFileSync('bash', [
      '-c',
      `mkdir -p "$2" && git -C "$1" ls-files -z -co --exclude-standard | (cd "$1" && tar --null --ignore-failed-read -T - -cf -) | tar -xf - -C "$2"`,
      'copy',
      REPO,
      clone,
    ]);
    const agent = terminal(
      'terminal 1',
      byTerminal(1)
        .map((s) => s.command)
        .join('\n'),
    );
    await waitFor('the agent (npm ci, build, start)', () => /Try:\n\s+curl /.test(agent.output) || agent.child.exitCode !== null, 300_000, 200);
    if (agent.child.exitCode !== null) throw new Error(`terminal 1 ended:\n${agent.output}`);
  }),
);

test.after(
  loud(async () => {
    // A failed step may leave the load balancer: remove it through the API (haproxy outlives the agent).
    if (clone) execFileSync('bash', ['-c', 'examples/lb delete lb-quickstart; examples/lb delete lb-http-basic; true'], { cwd: clone, env, stdio: 'ignore' });
    for (const t of terminals.reverse()) {
      if (t.child.exitCode !== null || t.child.signalCode !== null) continue;
      try {
        process.kill(-t.child.pid!, 'SIGTERM');
      } catch {
        // already gone
      }
    }
    // Any haproxy still running from the clone's base directory.
    const base = join(clone, '.amphora-dev', 'lib');
    for (const lb of clone ? readdirSync(base, { withFileTypes: true }).filter((d) => d.isDirectory() && d.name !== 'certs') : []) {
      try {
        process.kill(Number(readFileSync(join(base, lb.name, `${lb.name}.pid`), 'utf8').trim()), 'SIGKILL');
      } catch {
        // not running
      }
    }
    for (const a of devVipRoutes().filter((r) => !routesBefore.includes(r))) {
      execFileSync('bash', ['-c', `ip route del local ${a}/32 dev lo table local || true`], { stdio: 'ignore' });
    }
  }),
);

test('from `npm start`, at most three commands take traffic through a load balancer', () => {
  const upToTraffic: string[] = [];
  for (const s of [...byTerminal(2), ...byTerminal(3)]) {
    upToTraffic.push(s.command);
    if (s.command.includes('curl -s http://203.0.113.100/')) break;
  }
  assert.ok(upToTraffic.length <= 3, `${upToTraffic.length} commands: ${upToTraffic.join('; ')}`);
  assert.match(
    byTerminal(1)
      .map((s) => s.command)
      .join('\n'),
    /^npm ci && sudo npm start$/,
  );
});

test('terminal 2: the members listen on loopback, the third not ready', async () => {
  const [members] = byTerminal(2);
  const t = terminal('terminal 2', members!.command);
  await waitFor('the members', () => t.output.split('\n').filter((l) => l.includes('listening')).length === members!.expected.length, 10_000);
  assert.equal(normalized(t.output.split('\n')), normalized(members!.expected));
});

test('terminal 3: the walkthrough runs as written (API 2.0, then API 1.0 with Octavia-rendered configs)', async () => {
  const steps = byTerminal(3);
  const script = steps.map((s, i) => `${s.command}\necho "@@step ${i} $?@@"`).join('\n');
  const t = terminal('terminal 3', script);
  const started = Date.now();
  await waitFor('the walkthrough', () => t.child.exitCode !== null, 600_000, 200);
  console.log(`walkthrough: ${steps.length} commands in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  // [output of step 0, "0", status, output of step 1, "1", status, ..., what follows the last marker]
  const chunks = t.output.split(/^@@step (\d+) (\d+)@@$/m);
  results = steps.map((step, i) => {
    if (chunks[3 * i + 1] !== String(i)) return { step, output: [`(no marker: the shell ended) ${t.output.slice(-2000)}`], status: -1 };
    return { step, output: chunks[3 * i]!.split('\n'), status: Number(chunks[3 * i + 2]) };
  });
  const failed = results.filter((r) => r.status !== 0 || JSON.stringify(normalized(r.output)) !== JSON.stringify(normalized(r.step.expected)));
  for (const r of failed) {
    console.log(`\n$ ${r.step.command}\n  exit ${r.status}\n  expected:\n    ${r.step.expected.join('\n    ')}\n  got:\n    ${r.output.join('\n    ')}`);
  }
  assert.equal(
    failed.map((r) => r.step.command),
    [],
    'commands whose output differs from the README or docs/walkthrough.md',
  );
  assert.is(results.length, steps.length);
});

test('the held member received 0 requests before it was ready, through API 2.0 and API 1.0', () => {
  const counts = results.filter((r) => r.step.command.includes('/count'));
  assert.is(counts.length, 2);
  // 0 requests is the claim; the check count depends on how long the step took (a loaded machine may not have checked yet).
  for (const r of counts) assert.match(r.output.join('\n'), /^127\.0\.0\.1:8083: 0 requests, \d+ checks?, not ready$/m, r.output.join('\n'));
  // ...and its share once ready: the 30 requests after it turned ONLINE / UP.
  const after = results.filter((r) => r.step.command.includes('seq 30'));
  assert.is(after.length, 2);
  for (const r of after) assert.match(r.output.join('\n'), /^\s*10 served by 127\.0\.0\.1:8083$/m);
});

test('a member removed with requests in flight drains: every request in flight is answered', () => {
  const waits = results.filter((r) => r.step.command === 'wait');
  assert.is(waits.length, 2);
  for (const r of waits) {
    for (const port of [8081, 8082, 8083]) assert.ok(r.output.includes(`served by 127.0.0.1:${port}`), `${port}: ${r.output.join('|')}`);
  }
  const draining = results.find((r) => r.step.command === 'examples/lb status lb-quickstart' && r.output.some((l) => l.startsWith('m1 DRAINING')));
  assert.ok(draining, 'API 2.0 status showed m1 DRAINING while its request was in flight');
});

test('the development default starts a fixture spec (issue 18: its VIP did not bind)', () => {
  const put = (lb: string) => execFileSync('bash', ['-c', `examples/lb ${lb} 2>&1`], { cwd: clone, env, encoding: 'utf8' });
  assert.match(put('put test/fixtures/specs/http-basic.json'), /^started\n {2}load balancer created\n/);
  assert.is(put('delete lb-http-basic'), 'deleted lb-http-basic\n');
});

test.run();
