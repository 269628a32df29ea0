// The keepalived policy (agent/haproxy/config/policy/keepalived-config.ts) against
// the real things: the VRRP configs Octavia 11, 16 and 19's
// KeepalivedJinjaTemplater renders and the LVS configs their LvsJinjaTemplater
// and the agent's renderer write pass it, and keepalived 2.2 and 2.3 accept
// every one (`-t`); through API 1.0, a vrrp_script that would run a marker
// script is refused with a 400 before anything is written, and `vrrp/start`
// runs the stored config, whose check scripts run, and never the marker. An
// LVS config with a MISC_CHECK elsewhere is refused likewise (this kernel has
// no IP_VS: LVS configs are judged and checked, never run).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { checkKeepalivedConfig, OCTAVIA_NAMESPACE, type KeepalivedConfigKind } from '../../agent/haproxy/config/policy/keepalived-config.js';
import { renderLoadBalancer } from '../../agent/render/render.js';
import { DEFAULT_RENDER_SETTINGS } from '../../agent/render/settings.js';
import { validateSpec } from '../../agent/model/spec/validate.js';
import { run } from '../../agent/system/exec.js';
import { runWithScratchNetns } from '../../agent/system/netns.js';
import { startAgent, type AgentUnderTest } from '../helpers/agent-process.js';
import { apiRequest } from '../helpers/api-client.js';
import { HAPROXIES, KEEPALIVEDS, OCTAVIAS, octaviaPython, testDir, type OctaviaUnderTest } from '../helpers/haproxies.js';
import { loud } from '../helpers/hooks.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { forOctavia, OctaviaRenderer, octaviaSettings } from '../helpers/octavia-render.js';
import { testPorts } from '../helpers/ports.js';

const test = suite('keepalived policy: Octavia 11/16/19 and agent renders pass, keepalived 2.2/2.3 accept them; other scripts never run');
const ports = testPorts('keepalived-policy');
const RENDERER = fileURLToPath(new URL('../../../test/interop/octavia_keepalived_render.py', import.meta.url));
const FIXTURES = join(process.cwd(), 'test', 'fixtures', 'specs');

let net: TestNetwork;
let dir: string;
let agent: AgentUnderTest;
/** The test namespace's end of its veth pair: the VRRP interface. */
let iface: string;

interface VrrpRenders {
  octavia: string;
  configs: Record<string, string>;
}

interface RenderArgs {
  base_path: string;
  interface: string;
  check_interval?: number;
  amphora?: { vrrp_ip: string; peer: string; vip: string; cidr: string; gateway: string };
}

function renderVrrp(o: OctaviaUnderTest, args: RenderArgs): VrrpRenders {
  const [cmd, argv] = octaviaPython(o, RENDERER, [JSON.stringify(args)]);
  return JSON.parse(execFileSync(cmd, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })) as VrrpRenders;
}

/** keepalived -t's verdict as the agent's `check` reads it: 0, or 6 (script-security advice) without an error. */
async function keepalivedAccepts(argv: string[]): Promise<{ ok: boolean; output: string }> {
  const res = argv[0] === 'scratch' ? await runWithScratchNetns(OCTAVIA_NAMESPACE, argv.slice(1)) : await run(argv);
  return { ok: res.exitCode === 0 || (res.exitCode === 6 && !/Unknown keyword|error/i.test(res.output)), output: res.output };
}

/**
 * What keepalived -t says of Octavia's own renders, on both versions, and
 * skips when it runs them (exit 5 with -t): a virtual_server group of an
 * address family without members (the agent leaves those out), and the
 * host-route lines of keepalived_base.template, whose `gateway` is no route
 * keyword of keepalived's (it knows `via` and `gw`); and in 11, members of the
 * other address family in a group. Counted, and reported.
 */
const OCTAVIA_QUIRKS = [
  /has no real servers - ignoring$/,
  /Address family of virtual server and real server \S+ don't match - skipping real server\.$/,
  /unknown route keyword gateway$/,
  /VRRP parsed invalid IP gateway\. skipping IP\.\.\.$/,
];
/** Warnings that are no refusal: the checks' files are not installed in the test tree; MASTER with nopreempt; IPv6 VRRP (v3) has no auth. */
const HARMLESS = [
  /Disabling track script \S+ since not found\/accessible$/,
  /nopreempt will not work with initial state MASTER/,
  /VRRP version 3 does not support authentication\. Ignoring\.$/,
];
const quirks = new Map<string, number>();

/** keepalived -t on `text` with every keepalived of the matrix; VRRP in the test namespace (its interface exists there). */
async function assertKeepalivedAccepts(text: string, kind: KeepalivedConfigKind, what: string, octavia = false): Promise<void> {
  const cfg = join(dir, `${kind}-${randomUUID()}.conf`);
  writeFileSync(cfg, text);
  for (const k of KEEPALIVEDS) {
    const argv = kind === 'vrrp' ? ['ip', 'netns', 'exec', net.netns, ...k.command, '-t', '-f', cfg] : ['scratch', ...k.command, '-t', '-f', cfg];
    const v = await keepalivedAccepts(argv);
    if (v.ok) continue;
    const said = v.output
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);
    const other = said.filter((l) => !(octavia && OCTAVIA_QUIRKS.some((q) => q.test(l))) && !HARMLESS.some((h) => h.test(l)));
    assert.equal(other, [], `${k.label} -t refuses ${what}:\n${v.output}\n${text}`);
    for (const l of said) {
      const q = OCTAVIA_QUIRKS.find((r) => r.test(l));
      if (q) quirks.set(`${k.label} ${q.source}`, (quirks.get(`${k.label} ${q.source}`) ?? 0) + 1);
    }
  }
}

async function poll<T>(what: string, ms: number, f: () => T | null): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = f();
    if (v !== null) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test.before(
  loud(async () => {
    net = createTestNetwork();
    dir = await testDir('keepalived-policy');
    iface = execFileSync('ip', ['-n', net.netns, '-o', 'link', 'show', 'type', 'veth'], { encoding: 'utf8' }).split(':')[1]!.trim().split('@')[0]!;
    agent = await startAgent(HAPROXIES[0]!, dir, net.netns, ports.one());
  }),
);

test.after(async () => {
  if (agent) {
    await apiRequest(agent, 'PUT', '/1.0/vrrp/stop').catch(() => undefined);
    await agent.stop();
  }
  net?.destroy();
});

test('VRRP: every variant Octavia 11, 16 and 19 render passes the policy, and keepalived 2.2 and 2.3 accept it', async () => {
  let judged = 0;
  for (const o of OCTAVIAS) {
    const out = renderVrrp(o, { base_path: agent.basePath, interface: iface });
    assert.is(`octavia-${out.octavia.split('.')[0]}`, o.label);
    assert.is(Object.keys(out.configs).length, 4);
    for (const [variant, text] of Object.entries(out.configs)) {
      assert.match(text, `script ${agent.basePath}/vrrp/check_script.sh\n`);
      assert.equal(checkKeepalivedConfig(text, 'vrrp', { basePath: agent.basePath, namespaces: [OCTAVIA_NAMESPACE] }), [], `${o.label} ${variant}`);
      await assertKeepalivedAccepts(text, 'vrrp', `${o.label}'s ${variant}`, true);
      judged++;
    }
  }
  assert.is(judged, 12);
  console.log(`keepalived -t on Octavia's VRRP renders, known quirks: ${JSON.stringify(Object.fromEntries(quirks))}`);
});

test("LVS: the configs of Octavia 11, 16 and 19 and of the agent's renderer pass for every fixture, and keepalived accepts them", async () => {
  const settings = { ...DEFAULT_RENDER_SETTINGS, basePath: agent.basePath };
  const ctx = { basePath: agent.basePath, namespaces: [OCTAVIA_NAMESPACE] };
  const kinds = new Set<string>();
  let judged = 0;
  for (const o of OCTAVIAS) {
    const renderer = await OctaviaRenderer.start(o);
    try {
      for (const file of readdirSync(FIXTURES).filter((f) => f.endsWith('.json'))) {
        const spec = validateSpec(JSON.parse(readFileSync(join(FIXTURES, file), 'utf8')));
        const theirs = await renderer.render(forOctavia(spec), '2.6', octaviaSettings(settings));
        const ours = o === OCTAVIAS[0] ? renderLoadBalancer(spec, settings, { initStateAtStartup: false }).lvsConfigs : [];
        const all = [
          ...Object.entries(theirs.lvs).map(([id, c]) => [`${o.label} ${file} ${id}`, c]),
          ...ours.map((c) => [`agent ${file} ${c.listenerId}`, c.content]),
        ];
        for (const [what, text] of all as [string, string][]) {
          assert.equal(checkKeepalivedConfig(text, 'lvs', ctx), [], what);
          await assertKeepalivedAccepts(text, 'lvs', what, !what.startsWith('agent '));
          for (const k of ['MISC_CHECK', 'HTTP_GET', 'TCP_CHECK', 'persistence_granularity', 'uthreshold']) if (text.includes(k)) kinds.add(k);
          if (text.includes(`${agent.basePath}/lvs/check/udp_check.sh`)) kinds.add('udp_check.sh');
          if (text.includes('amphora-health-checker sctp')) kinds.add('sctp');
          judged++;
        }
      }
    } finally {
      await renderer.close();
    }
  }
  // Every check and option of the templates was among them.
  assert.equal([...kinds].sort(), ['HTTP_GET', 'MISC_CHECK', 'TCP_CHECK', 'persistence_granularity', 'sctp', 'udp_check.sh', 'uthreshold']);
  assert.ok(judged >= 40, `${judged} LVS configs judged`);
  console.log(`${judged} LVS configs; keepalived -t on Octavia's renders, known quirks so far: ${JSON.stringify(Object.fromEntries(quirks))}`);
});

test("API 1.0: a vrrp_script that would run a marker script is a 400; vrrp/start runs the stored config's checks, never the marker", async () => {
  const marker = join(dir, 'marker');
  const evilScript = join(dir, 'evil.sh');
  writeFileSync(evilScript, `#!/bin/sh\ntouch ${marker}\n`);
  chmodSync(evilScript, 0o755);
  const good = renderVrrp(OCTAVIAS.at(-1)!, {
    base_path: agent.basePath,
    interface: iface,
    check_interval: 1,
    amphora: { vrrp_ip: net.nsIp, peer: net.hostIp, vip: '192.0.2.77', cidr: '192.0.2.0/24', gateway: '192.0.2.1' },
  }).configs.amphora!;
  const evil = good.replace(`script ${agent.basePath}/vrrp/check_script.sh`, `script ${evilScript}`);
  const notify = good.replace('    nopreempt\n', `    nopreempt\n    notify_master ${evilScript}\n`);
  assert.is.not(evil, good);
  assert.is.not(notify, good);
  // Only the policy stands between these and root: keepalived itself takes them.
  await assertKeepalivedAccepts(evil, 'vrrp', 'the marker vrrp_script');
  await assertKeepalivedAccepts(notify, 'vrrp', 'the marker notify_master');

  const ok = await apiRequest(agent, 'PUT', '/1.0/vrrp/upload', { raw: good });
  assert.is(ok.status, 200, ok.text);
  const stored = join(agent.basePath, 'vrrp', 'octavia-keepalived.conf');
  const lineOf = (text: string, word: string) => text.split('\n').findIndex((l) => l.trim().startsWith(word)) + 1;
  for (const [text, directive] of [
    [evil, 'script'],
    [notify, 'notify_master'],
  ] as const) {
    const line = lineOf(text, `${directive} ${evilScript}`);
    assert.ok(line > 0);
    const res = await apiRequest(agent, 'PUT', '/1.0/vrrp/upload', { raw: text });
    assert.is(res.status, 400, res.text);
    assert.is(res.json.message, 'Invalid request');
    assert.match(res.json.details, new RegExp(`line ${line}: ${directive}: `));
    assert.is(readFileSync(stored, 'utf8'), good, 'the refused config is never written');
  }

  // A witness among the check scripts the stored config's check_script.sh runs.
  const witness = join(dir, 'witness');
  writeFileSync(join(agent.basePath, 'vrrp', 'check_scripts', 'witness.sh'), `echo ran >> ${witness}\n`);
  const start = await apiRequest(agent, 'PUT', '/1.0/vrrp/start');
  assert.is(start.status, 202, start.text);
  const runs = await poll('three runs of the stored check script', 30_000, () => {
    const n = existsSync(witness) ? readFileSync(witness, 'utf8').split('\n').filter(Boolean).length : 0;
    return n >= 3 ? n : null;
  });
  assert.ok(runs >= 3);
  assert.not.ok(existsSync(marker), 'the marker script ran');
});

test('API 1.0: an LVS config with a MISC_CHECK elsewhere, an include or a notify hook is a 400 and nothing is written', async () => {
  const spec = validateSpec(JSON.parse(readFileSync(join(FIXTURES, 'udp-only.json'), 'utf8')));
  const renderer = await OctaviaRenderer.start(OCTAVIAS.at(-1)!);
  let good: string;
  try {
    good = (await renderer.render(forOctavia(spec), '2.6', octaviaSettings({ ...DEFAULT_RENDER_SETTINGS, basePath: agent.basePath }))).lvs['l-dns']!;
  } finally {
    await renderer.close();
  }
  const check = `${agent.basePath}/lvs/check/udp_check.sh`;
  assert.match(good, check);
  const bad = [
    good.replace(check, join(dir, 'evil.sh')),
    `include ${join(dir, 'other.conf')}\n${good}`,
    good.replace(/(\n\s+weight \d+\n)/, `$1        notify_up ${join(dir, 'evil.sh')}\n`),
  ];
  for (const text of bad) {
    assert.is.not(text, good);
    const id = randomUUID();
    const res = await apiRequest(agent, 'PUT', `/1.0/listeners/${agent.amphoraId}/${id}/udp_listener`, { raw: text });
    assert.is(res.status, 400, res.text);
    assert.match(res.json.details, /refused by the amphora agent's config policy:\nline \d+: /);
    assert.is((await apiRequest(agent, 'GET', `/1.0/listeners/${id}/udp_listener`)).status, 404);
    const lvsFiles = existsSync(join(agent.basePath, 'lvs')) ? readdirSync(join(agent.basePath, 'lvs')) : [];
    assert.not.ok(
      lvsFiles.some((f) => f.includes(id)),
      'a file of the refused listener',
    );
  }
  const id = randomUUID();
  const res = await apiRequest(agent, 'PUT', `/1.0/listeners/${agent.amphoraId}/${id}/udp_listener`, { raw: good });
  assert.is(res.status, 200, res.text);
  assert.is((await apiRequest(agent, 'GET', `/1.0/listeners/${id}/udp_listener`)).text, good);
});

test.run();
