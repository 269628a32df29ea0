// Fuzzing API 1.0's config upload: configs Octavia 11, 16 and 19 render for
// the fixture load balancers, mutated (lines dropped, duplicated, swapped;
// words replaced or deleted; newlines and bytes injected; the advisory's
// dangerous directives smuggled in whole or by splitting a line; escapes,
// quotes, NULs, trailing backslashes that a reader might take for line
// continuations, and the master CLI's metacharacters put into words).
//  - cheap, in-process, over every mutant (6,000): the policy never throws,
//    names lines that exist, refuses every smuggled directive on its line,
//    and refuses nothing but an orphaned insecure-fork-wanted, or a line
//    moved into a section Octavia never renders it in, in a config that was
//    only reordered or thinned;
//  - through the real agent and haproxy, a deterministic sample on every
//    haproxy of the matrix: an upload is answered 202 or 400, never 5xx or
//    not at all; a 400 from the policy exactly when the policy refuses; each
//    accepted mutant is reloaded, and after every step the live config
//    (what haproxy loaded) passes the policy and its master is alive;
//  - differential, on every haproxy of the matrix: a sample of the lines of
//    the mutants the policy accepts, read by haproxy itself
//    (test/helpers/haproxy-words.ts), has the words the policy read.
// The seed is fixed (FUZZ_SEED overrides it), so a failure replays.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loud } from '../helpers/hooks.js';
import { HAPROXIES, OCTAVIAS, testDir, type HaproxyUnderTest } from '../helpers/haproxies.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { startAgent } from '../helpers/agent-process.js';
import { testPorts } from '../helpers/ports.js';
import { apiRequest } from '../helpers/api-client.js';
import { forOctavia, OctaviaRenderer, octaviaSettings } from '../helpers/octavia-render.js';
import { checkConfigPolicy } from '../../agent/haproxy/config/policy/haproxy-config.js';
import type { PolicyContext, PolicyViolation } from '../../agent/haproxy/config/policy/types.js';
import { MAX_WORDS, tokenizeLine } from '../../agent/haproxy/config/tokenizer.js';
import { ACL_PREFIX, answerIs, readByHaproxy, showAnswer } from '../helpers/haproxy-words.js';
import { loadBalancerFiles } from '../../agent/haproxy/layout.js';
import { withoutGroupLines } from '../../agent/loadbalancer/v1-service.js';
import { DEFAULT_RENDER_SETTINGS } from '../../agent/render/settings.js';
import { validateSpec } from '../../agent/model/spec/validate.js';
import type { LoadBalancerSpec } from '../../agent/model/spec/types.js';

const FIXTURES = join(process.cwd(), 'test', 'fixtures', 'specs');
const LB = 'lb-fuzz';
const SEED = Number(process.env.FUZZ_SEED ?? 20261203);
const MUTANTS = 6000;
/** Mutants sent to the agent, per haproxy: the host's 2.6 takes the most (its haproxy -c is the cheapest). */
const THROUGH_AGENT: Record<string, number> = { 'haproxy-2.6': 240, 'haproxy-3.0': 60, 'haproxy-3.2': 60, 'haproxy-3.4': 60 };

/** mulberry32: a small deterministic PRNG. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Kind =
  | 'drop'
  | 'duplicate'
  | 'swap'
  | 'replace word'
  | 'delete word'
  | 'newline'
  | 'bytes'
  | 'smuggle'
  | 'split smuggle'
  | 'escape'
  | 'quote'
  | 'nul'
  | 'continuation'
  | 'cli metachar';
const STRUCTURAL: Kind[] = ['drop', 'duplicate', 'swap'];
const KINDS: Kind[] = [
  ...STRUCTURAL,
  'replace word',
  'delete word',
  'newline',
  'bytes',
  'smuggle',
  'split smuggle',
  'escape',
  'quote',
  'nul',
  'continuation',
  'cli metachar',
];
/** Accepted mutants' lines read by each haproxy for the differential check. */
const DIFFERENTIAL_LINES = 3000;
/** One agent API port per haproxy (19660 + i before: inside octavia-network's block). */
const agentPort = testPorts('config-fuzz').range(HAPROXIES.length);

interface Mutant {
  seed: string;
  kinds: Kind[];
  text: string;
  /** 0-based lines of smuggled directives the policy must refuse. */
  smuggled: number[];
}

interface Env {
  ctx: PolicyContext;
  vip: string;
  serverPem: string;
}

/** Directives a tenant must never get, one line each (the advisory's and their relatives). */
function dangerous(e: Env): string[] {
  const lbDir = join(e.ctx.basePath, LB);
  return [
    'program pwn',
    '    lua-load /tmp/pwn.lua',
    `    errorfile 503 ${e.serverPem}`,
    `    stats socket ipv4@${e.vip}:9999 level admin`,
    `    stats socket ${e.ctx.basePath}/${LB}.sock level admin`,
    `    http-request return status 200 content-type text/plain file ${e.serverPem}`,
    'global\n    user root',
    'global\n    uid 0',
    '    chroot /',
    '    log 198.51.100.7:514 local0',
    '    setenv PATH /tmp',
    '    presetenv X y',
    `    server evil unix@${lbDir}/master.sock`,
    `    server evil ${lbDir}/master.sock`,
    '    external-check command /bin/sh',
    `    acl leak req.hdr(x) -f ${e.serverPem}`,
    `    ssl-dh-param-file ${e.serverPem}`,
    '    crt-base /etc/octavia/certs',
    `    bind ${e.vip}:8443 ssl crt ${e.serverPem}`,
    `    server-state-file ${e.ctx.basePath}/../../etc/octavia/amphora-agent.conf`,
    '    stats admin if TRUE',
    `    http-request set-header x %[req.hdr(x),map_beg(${e.serverPem})]`,
    '    lua-prepend-path /tmp/?.lua',
    `    filter spoe engine x config ${e.serverPem}`,
    `    errorfile 503 "\${HOME}/pwn"`,
  ];
}

const SECTION_WORDS = new Set([
  'global',
  'defaults',
  'frontend',
  'backend',
  'listen',
  'peers',
  'userlist',
  'resolvers',
  'mailers',
  'program',
  'http-errors',
  'ring',
  'cache',
  'crt-store',
  'traces',
  'log-forward',
  'fcgi-app',
  'dynamic-update',
  'acme',
]);

const WORDS = [
  'program',
  'lua-load',
  'errorfile',
  'stats',
  'socket',
  'level',
  'admin',
  'user',
  'root',
  'uid',
  '0',
  'chroot',
  'log',
  'global',
  'frontend',
  'backend',
  'defaults',
  'listen',
  'bind',
  'server',
  'crt',
  'ca-file',
  '-f',
  'file',
  'return',
  'setenv',
  'external-check',
  'command',
  'insecure-fork-wanted',
  '/etc/octavia/certs/server.pem',
  '/tmp',
  'unix@/tmp/x.sock',
  'ipv4@0.0.0.0:1',
  '"',
  "'",
  '\\',
  '#',
  '"$HOME"',
  '"$' + '{X}"',
  '%[env(HOME)]',
  'map(/etc/passwd)',
  '',
  '999999999',
  '-1',
  '127.0.0.1:1',
  '::',
  'http-request',
  'deny',
  'maxconn',
  'nbthread',
  '64',
  'timeout',
  'check',
  'disabled',
  'init-state',
];
/** Backslash sequences, those haproxy resolves and those it does not (or refuses). */
const ESCAPES = ['\\ ', '\\\\', '\\#', "\\'", '\\"', '\\t', '\\n', '\\r', '\\x41', '\\x0a', '\\x3b', '\\xc3\\xa9', '\\xff', '\\$', '\\', '\\x4', '\\q', '\\1'];
const QUOTES = ['"', "'", '""', "''", '\\"', '"\'"', "'\"'"];
const NULS = ['\0', '\\x00', "'\\x00'", '"\\x00"', '\\0', '\\x0'];
/** What a reader of lines might take for a continuation: haproxy has none. */
const CONTINUATIONS = ['\\', ' \\', '\\ ', '"\\', '\\\r'];
/** The master CLI's separators and prefixes, raw, quoted and escaped. */
const CLI_METACHARACTERS = [';', '; show info', ';@1 disable frontend x', '@1 ', '@!1 ', '@master ', '"a;b"', "'@1;x'", '\\;', '\\n', '\\x0a', '\\x3b'];
const BYTES = ['\0', '\r', '\t', '\n', '"', "'", '\\', '#', '$', '{', '}', ',', ' ', '\x7f', '\x1b', 'é', '\uFFFD', 'x', '\u2028'];

function mutate(seeds: string[], e: Env, r: () => number, id: number): Mutant {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const base = Math.floor(r() * seeds.length);
  const lines = seeds[base]!.split('\n');
  const kinds: Kind[] = [];
  // Track smuggled lines by identity: later mutations may move or remove them.
  const smuggledTexts = new Set<string>();
  const steps = 1 + Math.floor(r() * 3);
  for (let s = 0; s < steps; s++) {
    const kind = pick(KINDS);
    kinds.push(kind);
    const i = Math.floor(r() * lines.length);
    const line = lines[i] ?? '';
    switch (kind) {
      case 'drop':
        lines.splice(i, 1);
        break;
      case 'duplicate':
        lines.splice(i, 0, line);
        break;
      case 'swap': {
        const j = Math.floor(r() * lines.length);
        [lines[i], lines[j]] = [lines[j]!, line];
        break;
      }
      case 'replace word':
      case 'delete word': {
        const parts = line.split(/( +)/);
        const words = parts.map((p, k) => (p.trim() ? k : -1)).filter((k) => k >= 0);
        if (words.length === 0) break;
        parts[pick(words)] = kind === 'replace word' ? pick(WORDS) : '';
        lines[i] = parts.join('');
        break;
      }
      case 'newline':
      case 'bytes': {
        const at = Math.floor(r() * (line.length + 1));
        const add = kind === 'newline' ? '\n' : Array.from({ length: 1 + Math.floor(r() * 6) }, () => pick(BYTES)).join('');
        lines.splice(i, 1, ...`${line.slice(0, at)}${add}${line.slice(at)}`.split('\n'));
        break;
      }
      case 'escape':
      case 'nul':
      case 'cli metachar': {
        // CLI metacharacters go into a server line when there is one: those are the words the runtime path passes on.
        const servers = lines.flatMap((l, k) => (/^\s*server\s/.test(l) ? [k] : []));
        const k = kind === 'cli metachar' && servers.length > 0 ? pick(servers) : i;
        const target = lines[k] ?? '';
        const add = pick(kind === 'escape' ? ESCAPES : kind === 'nul' ? NULS : CLI_METACHARACTERS);
        const at = Math.floor(r() * (target.length + 1));
        lines[k] = `${target.slice(0, at)}${add}${target.slice(at)}`;
        break;
      }
      case 'quote': {
        // Wrap a word in quotes, or put a quote (or an empty pair) anywhere.
        const parts = line.split(/( +)/);
        const words = parts.map((p, k) => (p.trim() ? k : -1)).filter((k) => k >= 0);
        if (words.length > 0 && r() < 0.5) {
          const w = pick(words);
          const q = pick(['"', "'"]);
          parts[w] = `${q}${parts[w]}${q}`;
          lines[i] = parts.join('');
        } else {
          const at = Math.floor(r() * (line.length + 1));
          lines[i] = `${line.slice(0, at)}${pick(QUOTES)}${line.slice(at)}`;
        }
        break;
      }
      case 'continuation': {
        // A trailing backslash, and half the time a dangerous directive on the next line, which must stay a line of its own.
        lines[i] = `${line}${pick(CONTINUATIONS)}`;
        if (r() < 0.5) {
          const payload = pick(dangerous(e)).split('\n');
          smuggledTexts.add(payload.at(-1)!);
          lines.splice(i + 1, 0, ...payload);
        }
        break;
      }
      case 'smuggle':
      case 'split smuggle': {
        // The last line of a payload is the directive; a `global` line before it makes a worker's identity one.
        const payload = pick(dangerous(e)).split('\n');
        smuggledTexts.add(payload.at(-1)!);
        if (kind === 'smuggle') lines.splice(i, 0, ...payload);
        else {
          // The advisory's shape: a value ends, the payload follows on its own line, the rest of the template line after it.
          const at = Math.floor(r() * (line.length + 1));
          lines.splice(i, 1, line.slice(0, at), ...payload, line.slice(at));
        }
        break;
      }
    }
  }
  const text = lines.join('\n');
  const all = text.split('\n');
  // user/uid name the workers only in a global section (elsewhere they are a userlist's or an error).
  const sectionOf = (k: number) => {
    for (let j = k; j >= 0; j--) {
      const w = tokenizeLine(all[j]!).words[0];
      if (w !== undefined && SECTION_WORDS.has(w)) return w;
    }
    return 'global';
  };
  const smuggled = all.flatMap((l, k) => (smuggledTexts.has(l) && (!/^\s*(user|uid)\s/.test(l) || sectionOf(k) === 'global') ? [k] : []));
  return { seed: `${SEED}/${id} (seed config ${base})`, kinds, text, smuggled };
}

const t = suite('config fuzzing of API 1.0: mutated Octavia renders never crash the policy or the agent, never get a 5xx');
let network: TestNetwork;
let dir: string;
const seeds: string[] = [];
/** Seeds haproxy can load with the agent's files (no TLS: their certificate files are the driver's). */
const loadable: string[] = [];
/** Lines of the mutants the policy accepts, in the order met: what the differential check reads. */
const acceptedLines = new Set<string>();
/** Those of them no seed has. */
const newLines = new Set<string>();

/** The fixture load balancers as LB on the test VIP, without extra VIPs the namespace does not have. */
function forAgent(spec: LoadBalancerSpec, vip: string): LoadBalancerSpec {
  const copy = forOctavia(spec);
  copy.id = LB;
  copy.vip_address = vip;
  copy.additional_vips = [];
  return copy;
}

t.before(
  loud(async () => {
    network = createTestNetwork();
    dir = await testDir('fz');
    const settings = { ...octaviaSettings(DEFAULT_RENDER_SETTINGS), base_path: '/BASE', base_cert_dir: '/BASE/certs' };
    for (const o of OCTAVIAS) {
      const r = await OctaviaRenderer.start(o);
      try {
        for (const f of readdirSync(FIXTURES)
          .filter((x) => x.endsWith('.json') && !x.startsWith('render-only'))
          .sort()) {
          const spec = forAgent(validateSpec(JSON.parse(readFileSync(join(FIXTURES, f), 'utf8'))), network.nsIp);
          const cfg = (await r.render(spec, '2.6', settings)).haproxy;
          if (cfg === null) continue;
          seeds.push(cfg);
          if (!/ crt-list | crt | ca-file /.test(cfg)) loadable.push(cfg);
        }
      } finally {
        await r.close();
      }
    }
  }),
);

t.after(() => network?.destroy());

/** A seed or mutant with its /BASE placeholders as the agent's directories. */
const at = (text: string, base: string) => text.replaceAll('/BASE', base);

const envFor = (base: string): Env => ({
  ctx: { lbId: LB, basePath: base, baseCertDir: join(base, 'certs'), protectedFiles: ['/etc/octavia/certs/server.pem', '/etc/octavia/amphora-agent.conf'] },
  vip: network.nsIp,
  serverPem: '/etc/octavia/certs/server.pem',
});

t(`${MUTANTS} mutants, judged in-process: the policy never throws, refuses each smuggled directive on its line`, () => {
  assert.ok(seeds.length >= 60, `${seeds.length} seed configs`);
  assert.ok(loadable.length >= 30, `${loadable.length} loadable seed configs`);
  const e = envFor('/BASE');
  for (const s of seeds) assert.equal(checkConfigPolicy(s, e.ctx), [], 'an Octavia render is refused');
  const r = prng(SEED);
  const started = performance.now();
  const tally = new Map<string, number>();
  const acceptedKinds = new Map<string, number>();
  const seedLines = new Set(seeds.flatMap((s) => s.split('\n')));
  let refused = 0;
  for (let n = 0; n < MUTANTS; n++) {
    const m = mutate(seeds, e, r, n);
    const v = checkConfigPolicy(m.text, e.ctx);
    const lineCount = m.text.split('\n').length;
    for (const x of v) {
      // A line whose first word is empty or missing (an unclosed quote, "" first) has no keyword to name.
      const named = x.directive.length > 0 || (tokenizeLine(m.text.split('\n')[x.line - 1] ?? '').words[0] ?? '') === '';
      assert.ok(x.line >= 1 && x.line <= lineCount && named && x.reason.length > 0, `${m.seed}: ${JSON.stringify(x)}`);
    }
    for (const k of m.smuggled) {
      assert.ok(
        v.some((x) => x.line === k + 1),
        `${m.seed} ${m.kinds.join('+')}: smuggled line ${k + 1} not refused: ${JSON.stringify(m.text.split('\n')[k])}`,
      );
    }
    if (m.kinds.every((k) => STRUCTURAL.includes(k))) {
      // Under the allow-list a line moved into a section Octavia never renders it in is refused too: only such lines.
      const lines = m.text.split('\n');
      const moved = (x: PolicyViolation) =>
        x.directive === 'insecure-fork-wanted' ||
        ['global', 'defaults', 'frontend f', 'backend b', 'peers p'].some((head) => checkConfigPolicy(`${head}\n${lines[x.line - 1]}\n`, e.ctx).length === 0);
      assert.equal(
        v.filter((x) => !moved(x)),
        [],
        `${m.seed}: a reordered/thinned Octavia render is refused`,
      );
    }
    if (v.length > 0) refused++;
    else {
      for (const l of m.text.split('\n')) {
        acceptedLines.add(l);
        if (!seedLines.has(l)) newLines.add(l);
      }
      for (const k of new Set(m.kinds)) acceptedKinds.set(k, (acceptedKinds.get(k) ?? 0) + 1);
    }
    for (const k of m.kinds) tally.set(k, (tally.get(k) ?? 0) + 1);
  }
  const ms = performance.now() - started;
  console.log(
    `  ${MUTANTS} mutants in ${ms.toFixed(0)} ms (${(ms / MUTANTS).toFixed(3)} ms each), ${refused} refused; mutations: ${[...tally].map(([k, c]) => `${k} ${c}`).join(', ')}`,
  );
  console.log(
    `  accepted mutants with each mutation: ${[...acceptedKinds].map(([k, c]) => `${k} ${c}`).join(', ')}; ${acceptedLines.size} distinct lines, ${newLines.size} of them new`,
  );
  assert.ok(refused > MUTANTS / 4 && refused < MUTANTS, `${refused} refused`);
});

async function throughAgent(h: HaproxyUnderTest, index: number): Promise<void> {
  const count = THROUGH_AGENT[h.label] ?? 40;
  const agent = await startAgent(h, join(dir, `h${index}`), network.netns, agentPort(index));
  const e = envFor(agent.basePath);
  const files = loadBalancerFiles(agent.basePath, LB);
  const upload = (cfg: string) => apiRequest(agent, 'PUT', `/1.0/loadbalancer/${agent.amphoraId}/${LB}/haproxy`, { raw: cfg });
  const problems: string[] = [];
  const counts = { uploads: 0, accepted: 0, policy: 0, haproxy: 0, reloads: 0, reloadFailed: 0 };
  const started = performance.now();
  try {
    // A running load balancer first: the mutants replace it.
    const first = at(loadable[0]!, agent.basePath);
    assert.is((await upload(first)).status, 202);
    const start = await apiRequest(agent, 'PUT', `/1.0/loadbalancer/${LB}/start`);
    assert.is(start.status, 202, start.text);

    const r = prng(SEED + index + 1);
    // Mostly mutants of loadable seeds (so accepted ones can run), some of any seed.
    for (let n = 0; n < count; n++) {
      const m = mutate(n % 4 === 3 ? seeds : loadable, envFor('/BASE'), r, n);
      const text = at(m.text, agent.basePath);
      const expectRefusal = checkConfigPolicy(text, e.ctx).length > 0 || checkConfigPolicy(withoutGroupLines(text), e.ctx).length > 0;
      const res = await upload(text).catch((err: Error) => ({ status: 0, text: err.message, json: null }));
      counts.uploads++;
      const what = `${h.label} ${m.seed} ${m.kinds.join('+')}`;
      if (res.status !== 202 && res.status !== 400) {
        problems.push(`${what}: upload answered ${res.status}: ${res.text.slice(0, 300)}`);
        continue;
      }
      const byPolicy = res.status === 400 && /config policy/.test(String(res.json?.details ?? ''));
      if (byPolicy !== expectRefusal) problems.push(`${what}: policy refusal ${byPolicy}, expected ${expectRefusal}: ${res.text.slice(0, 300)}`);
      if (res.status === 400) {
        if (byPolicy) counts.policy++;
        else counts.haproxy++;
        continue;
      }
      counts.accepted++;
      const reload = await apiRequest(agent, 'PUT', `/1.0/loadbalancer/${LB}/reload`);
      counts.reloads++;
      if (reload.status !== 202) {
        counts.reloadFailed++;
        // A config haproxy -c passes can still fail to start (an address the namespace lacks): a 500 with haproxy's words.
        if (reload.status !== 500 || !reload.json?.message) problems.push(`${what}: reload answered ${reload.status}: ${reload.text.slice(0, 300)}`);
      }
      // Whatever happened, haproxy runs a config that passed validation and the policy.
      const live = readFileSync(files.live, 'utf8');
      const liveViolations = checkConfigPolicy(live, e.ctx);
      if (liveViolations.length > 0) problems.push(`${what}: the live config breaks the policy: ${JSON.stringify(liveViolations)}`);
      const pid = Number(readFileSync(files.pidFile, 'utf8').trim());
      try {
        process.kill(pid, 0);
      } catch {
        problems.push(`${what}: haproxy's master (${pid}) is gone`);
      }
    }
    const info = await apiRequest(agent, 'GET', '/1.0/info');
    assert.is(info.status, 200);
    assert.is(agent.process.exitCode, null, 'the agent died');
  } finally {
    await agent.stop();
  }
  const ms = performance.now() - started;
  console.log(`  ${h.label}: ${JSON.stringify(counts)} in ${(ms / 1000).toFixed(1)} s`);
  assert.equal(problems, [], `${problems.length} problems:\n${problems.join('\n')}`);
  assert.is(counts.uploads, count);
  // haproxy -c refusing a policy-clean mutant is rare under the allow-list (0 of 60 on 3.2 with the fixed seed): not required.
  assert.ok(counts.policy > 0 && counts.accepted > 0, JSON.stringify(counts));
}

/**
 * The accepted lines haproxy reads: every new one (a mutation made it), then
 * the seeds' lines with quotes, escapes or comments (where a reader can go
 * wrong), then the others, each group in a seeded order; none with more words
 * than fit after the oracle's own.
 */
function differentialSample(): string[] {
  const r = prng(SEED + 100);
  const fits = [...acceptedLines].filter((l) => tokenizeLine(ACL_PREFIX + l).words.length <= MAX_WORDS);
  const shuffled = (xs: string[]) =>
    xs
      .map((x) => [r(), x] as const)
      .sort((a, b) => a[0] - b[0])
      .map(([, x]) => x);
  const resolving = (l: string) => /["'\\#]/.test(l);
  const seedsOnly = fits.filter((l) => !newLines.has(l));
  return [
    ...shuffled(fits.filter((l) => newLines.has(l))),
    ...shuffled(seedsOnly.filter(resolving)),
    ...shuffled(seedsOnly.filter((l) => !resolving(l))),
  ].slice(0, DIFFERENTIAL_LINES);
}

async function differential(h: HaproxyUnderTest, index: number): Promise<void> {
  const lines = differentialSample();
  // The allow-list accepts fewer mutant lines than the deny-list did: 593 distinct ones with the fixed seed.
  assert.ok(lines.length >= DIFFERENTIAL_LINES / 6, `${lines.length} accepted lines to read (they come from the in-process test)`);
  for (const l of lines) assert.is(tokenizeLine(l).unreadable, undefined, `the policy accepted an unreadable line: ${JSON.stringify(l)}`);
  const started = performance.now();
  const { answers, output } = await readByHaproxy(h, dir, `words${index}`, lines);
  assert.ok(answers, `${h.label} refused the accepted lines: ${output}`);
  const differ = lines.flatMap((l, k) =>
    answerIs(answers[k]!, tokenizeLine(l).words)
      ? []
      : [`${JSON.stringify(l)}: policy read ${JSON.stringify(tokenizeLine(l).words)}, haproxy ${showAnswer(answers[k]!)}`],
  );
  const resolving = lines.filter((l) => /["'\\#]/.test(l)).length;
  const made = lines.filter((l) => newLines.has(l)).length;
  console.log(
    `  ${h.label}: ${lines.length} accepted lines (${made} made by mutations, ${resolving} with quotes, escapes or comments) read alike but ${differ.length}, in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  assert.equal(differ, [], `${differ.length} lines read otherwise by ${h.label}:\n${differ.join('\n')}`);
}

for (const [i, h] of HAPROXIES.entries()) {
  t(
    `${h.label}: a sample of the accepted mutants' lines is read by haproxy with the words the policy read`,
    loud(() => differential(h, i)),
  );
}

for (const [i, h] of HAPROXIES.entries()) {
  t(
    `${h.label}: ${THROUGH_AGENT[h.label]} mutants through the agent: 202 or 400, never 5xx; haproxy always runs a validated, policy-clean config`,
    loud(() => throughAgent(h, i)),
  );
}

t.run();
