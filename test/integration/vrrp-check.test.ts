// The VRRP check keepalived runs in ACTIVE_STANDBY (check_script.sh ->
// check_scripts/haproxy_check_script.sh -> templates/keepalived/
// haproxy-vrrp-check.sh), against real haproxy: Octavia's semantics (every
// load balancer's stats socket answers "show stat"), at the cost of a shell
// and socat (bench/vrrp-check compares it with Octavia's).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { statsSocket } from '../../agent/config/layout.js';
import { updateHaproxyCheckScript, uploadVrrp, VRRP_CHECK_SCRIPT } from '../../agent/keepalived/service.js';
import type { HaproxyEngine } from '../../agent/haproxy/apply/engine.js';
import { HAPROXIES, testDir } from '../helpers/haproxies.js';
import { applyConfig, testEngine } from '../helpers/engine.js';
import { loud } from '../helpers/hooks.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { octaviaStyleConfig } from '../helpers/octavia-config.js';

const test = suite('VRRP check script');

let net: TestNetwork;
let dir: string;
let engine: HaproxyEngine;
const lbs = [randomUUID(), randomUUID()];

/** Exit status and duration of one run of keepalived's check_script.sh. */
function runCheck(): { status: number; ms: number } {
  const t = Date.now();
  const res = spawnSync('bash', [join(dir, 'vrrp', 'check_script.sh')], { stdio: 'ignore', timeout: 20_000 });
  return { status: res.status ?? -1, ms: Date.now() - t };
}

const sockets = () => lbs.map((lb) => statsSocket(dir, lb));

test.before(
  loud(async () => {
    net = createTestNetwork();
    dir = await testDir('vrrp-check');
    mkdirSync(join(dir, 'units'), { recursive: true });
    engine = testEngine(HAPROXIES[0]!, dir, net.netns);
    for (const [i, lbId] of lbs.entries()) {
      await applyConfig(
        engine,
        lbId,
        'amp',
        octaviaStyleConfig({
          lbId,
          baseDir: dir,
          bind: `${net.nsIp}:${8100 + i}`,
          monitor: null,
          connectionLimit: 1000,
          members: [{ id: randomUUID(), address: '127.0.0.1:9' }],
        }),
      );
    }
    await uploadVrrp(
      dir,
      { netns: net.netns, logFacility: 1, processManager: 'direct', unitDir: join(dir, 'units') },
      'vrrp_instance x {\n}\n',
      sockets(),
      false,
    );
  }),
);

test.after(async () => {
  for (const lb of lbs) await engine.stop(lb).catch(() => undefined);
  net?.destroy();
});

test('the agent writes a shell check over every stats socket, not a Node.js command', () => {
  const text = readFileSync(join(dir, 'vrrp', 'check_scripts', 'haproxy_check_script.sh'), 'utf8');
  assert.is(text, `exec /bin/sh ${VRRP_CHECK_SCRIPT} ${sockets().join(' ')}\n`);
  assert.not.match(text, /node|main\.js/);
});

test('every haproxy answers: 0', () => {
  assert.is(runCheck().status, 0);
});

test('a socket that does not exist: 1; with no load balancer at all the check fails too', async () => {
  await updateHaproxyCheckScript(dir, [...sockets(), join(dir, 'gone.sock')], false);
  assert.is(runCheck().status, 1);
  await updateHaproxyCheckScript(dir, [], false);
  assert.is(runCheck().status, 1);
  await updateHaproxyCheckScript(dir, sockets(), false);
  assert.is(runCheck().status, 0);
});

test('one load balancer stopped: 1', async () => {
  await engine.stop(lbs[1]!);
  assert.is(runCheck().status, 1);
  await engine.start(lbs[1]!);
  assert.is(runCheck().status, 0);
});

test("a hung haproxy (its worker stopped): 1, after the 5 s answer timeout and well within keepalived's", async () => {
  const out = spawnSync('ip', ['netns', 'pids', net.netns], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean).map(Number);
  // Every process of lbs[0]'s haproxy (master and worker): their command lines name its config.
  const holders = out.filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(lbs[0]!);
    } catch {
      return false;
    }
  });
  assert.ok(holders.length >= 2, `haproxy processes of the load balancer: ${holders.join(',')}`);
  for (const pid of holders) process.kill(pid, 'SIGSTOP');
  try {
    const r = runCheck();
    assert.is(r.status, 1);
    assert.ok(r.ms >= 4500 && r.ms < 8000, `took ${r.ms} ms`);
  } finally {
    for (const pid of holders) process.kill(pid, 'SIGCONT');
  }
  assert.is(runCheck().status, 0);
});

test.run();
