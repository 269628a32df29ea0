// Two VRRP keepalived on one host, as two amphorae on one machine (or two
// containers sharing /run) run them: each names its own VRRP and checker
// child pid files under its base_path, so the second one starts too (with -p
// only, both would use /run/vrrp.pid and the second would refuse to start).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { keepalivedArgv, keepalivedPid, startKeepalived, stopKeepalived, type KeepalivedSettings } from '../../agent/keepalived/process.js';
import { uploadVrrp, vrrpInstance } from '../../agent/keepalived/service.js';
import { testDir } from '../helpers/haproxies.js';
import { loud } from '../helpers/hooks.js';
import { waitFor } from '../helpers/load.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';

const test = suite('two VRRP keepalived on one host');

const sh = (...args: string[]) => execFileSync(args[0]!, args.slice(1), { encoding: 'utf8' });

function vrrpConfig(vip: string, src: string, peer: string, iface: string): string {
  return [
    'vrrp_instance two_vrrp {',
    '    state BACKUP',
    `    interface ${iface}`,
    '    virtual_router_id 61',
    '    priority 100',
    '    nopreempt',
    '    advert_int 1',
    `    unicast_src_ip ${src}`,
    '    unicast_peer {',
    `        ${peer}`,
    '    }',
    '    virtual_ipaddress {',
    `        ${vip}`,
    '    }',
    '}',
    '',
  ].join('\n');
}

const childPid = (file: string) => Number(readFileSync(file, 'utf8').trim());
const parentOf = (pid: number) => Number(/^PPid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);

let nets: TestNetwork[] = [];
let bases: string[] = [];

test.before(
  loud(async () => {
    nets = [createTestNetwork(), createTestNetwork()];
    const dir = await testDir('vrrp-two');
    bases = [join(dir, 'a'), join(dir, 'b')];
  }),
);

test.after(async () => {
  for (const [i, base] of bases.entries()) {
    await stopKeepalived(vrrpInstance(base), settings(nets[i]!)).catch(() => undefined);
  }
  for (const n of nets) n.destroy();
});

const settings = (n: TestNetwork): KeepalivedSettings => ({ netns: n.netns, logFacility: 1, processManager: 'direct', unitDir: '/nonexistent' });

test('the VRRP instance passes -r and -c with files under base_path/vrrp', () => {
  const argv = keepalivedArgv(vrrpInstance('/var/lib/octavia'), settings(nets[0]!));
  assert.equal(argv.slice(argv.indexOf('-p')), [
    '-p',
    '/var/lib/octavia/vrrp/octavia-keepalived.pid',
    '-r',
    '/var/lib/octavia/vrrp/octavia-keepalived.vrrp.pid',
    '-c',
    '/var/lib/octavia/vrrp/octavia-keepalived.check.pid',
  ]);
});

test('both start and keep running; each VRRP child is named in its own base_path', async () => {
  for (const [i, n] of nets.entries()) {
    const iface = sh('ip', '-n', n.netns, '-o', 'link', 'show').match(/\d+: (aatn[0-9a-f]+)@/)![1]!;
    await uploadVrrp(bases[i]!, settings(n), vrrpConfig(`192.0.2.${100 + i}`, n.nsIp, n.hostIp, iface), [], false);
    await startKeepalived(vrrpInstance(bases[i]!), settings(n));
  }
  for (const [i, base] of bases.entries()) {
    const inst = vrrpInstance(base);
    const main = await keepalivedPid(inst);
    assert.ok(main, `keepalived ${i} is not running`);
    const vrrp = await waitFor(`keepalived ${i}'s VRRP child pid file`, () => (existsSync(inst.childPidFiles!.vrrp) ? childPid(inst.childPidFiles!.vrrp) : 0));
    assert.is(parentOf(vrrp), main, `the VRRP child of keepalived ${i} is not named in its own pid file`);
  }
  // Each one owns its VIP (nobody answers on the unicast peer): both VRRP children work.
  for (const [i, n] of nets.entries()) {
    await waitFor(`VIP ${i} on its namespace`, () => sh('ip', '-n', n.netns, 'addr', 'show').includes(`192.0.2.${100 + i}/32`), 10_000, 100);
  }
});

test('stopping one leaves the other running', async () => {
  await stopKeepalived(vrrpInstance(bases[0]!), settings(nets[0]!));
  assert.is(await keepalivedPid(vrrpInstance(bases[0]!)), null);
  assert.ok(await keepalivedPid(vrrpInstance(bases[1]!)));
  await waitFor('the stopped one to release its VIP', () => !sh('ip', '-n', nets[0]!.netns, 'addr', 'show').includes('192.0.2.100/32'), 5000, 100);
  assert.ok(sh('ip', '-n', nets[1]!.netns, 'addr', 'show').includes('192.0.2.101/32'));
});

test.run();
