// The CI image (image-build/build.sh ci: diskimage.yaml's root filesystem
// tarball) used as an amphora. Its root filesystem runs in a chroot; the
// baked-in agent starts in a fresh network namespace (the amphora's
// management side) from the command line of the image's amphora-agent.service,
// with that unit's capability bounding set and no-new-privileges, and is
// driven over mutual TLS like Octavia's controller drives it. haproxy (the
// image's) runs in a second namespace (the tenant side, amphora-haproxy on a
// real amphora) and forwards to a backend on the host.
//
// Runs alone with `node dist/test/run.js image/`. The build takes about two
// minutes from scratch; an image built from the same inputs less than a day
// ago is reused (AMPHORA_IMAGE_REUSE=1; set it to 0 to force a build).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loud } from '../helpers/hooks.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { issue, makeCa, type Ca, type Issued } from '../helpers/certs.js';
import { waitFor } from '../helpers/load.js';
import { TestBackend } from '../helpers/backend.js';
import { octaviaStyleConfig } from '../helpers/octavia-config.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const ROOTFS = `/var/tmp/aat-image-${process.pid}`;
const UNIT_DIR = '/usr/lib/systemd/system';
const UNITS = ['amphora-agent.service', 'amphora-netns.service'];
const AMPHORA_ID = 'b7c1e2d3-0000-4000-8000-00000000a001';
const LB_ID = 'c0ffee00-0000-4000-8000-00000000b001';
const PKI = `${ROOTFS}.pki`;
const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

let mgmt: TestNetwork;
let tenant: TestNetwork;
let agent: ChildProcess | null = null;
let agentLog = '';
let backend: TestBackend | null = null;
let serverCa: Ca;
let client: Issued;
let cleanedUp = false;

function sh(cmd: string, args: string[], opts: { input?: string } = {}): string {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'], env: { PATH: SYSTEM_PATH, LANG: 'C.UTF-8' }, ...opts });
}

/** Mount points at or below the root filesystem, deepest first. */
function mountsUnderRootfs(): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4] ?? '')
    .filter((p) => p === ROOTFS || p.startsWith(`${ROOTFS}/`))
    .sort((a, b) => b.length - a.length);
}

/** Everything this file set up, on every exit path: agent, mounts, files (the namespaces and what runs in them go with createTestNetwork). */
function cleanup(): void {
  if (cleanedUp) return;
  cleanedUp = true;
  if (agent && agent.exitCode === null) agent.kill('SIGKILL');
  for (let i = 0; i < 3 && mountsUnderRootfs().length > 0; i++) {
    for (const m of mountsUnderRootfs()) spawnSync('umount', ['-l', m], { stdio: 'ignore' });
  }
  // Never remove files while something is still mounted below (it could be /dev).
  spawnSync('rm', ['-rf', PKI], { stdio: 'ignore' });
  if (mountsUnderRootfs().length === 0) spawnSync('rm', ['-rf', '--one-file-system', ROOTFS], { stdio: 'ignore' });
  else console.error(`image test: left ${ROOTFS} in place, still mounted: ${mountsUnderRootfs().join(' ')}`);
}
process.on('exit', cleanup);

/** `KEY=value` lines of a unit file's section, values of repeated keys joined by spaces. */
function unitSetting(unit: string, key: string): string {
  const text = readFileSync(join(ROOTFS, UNIT_DIR, unit), 'utf8');
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${key}=`))
    .map((l) => l.slice(key.length + 1).trim())
    .join(' ');
}

/** An enable link in the image (absolute symlinks name paths inside the image, so no following). */
function enabled(unit: string): boolean {
  return lstatSync(join(ROOTFS, 'etc/systemd/system/multi-user.target.wants', unit), { throwIfNoEntry: false })?.isSymbolicLink() ?? false;
}

function request(method: string, path: string, body?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: mgmt.nsIp,
        port: 9443,
        method,
        path,
        agent: false,
        timeout: 30_000,
        ca: readFileSync(serverCa.cert),
        servername: AMPHORA_ID,
        cert: readFileSync(client.cert),
        key: readFileSync(client.key),
        headers: body === undefined ? {} : { 'content-type': 'application/octet-stream', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = '';
        res.on('data', (d) => {
          text += d;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end(body);
  });
}

function httpGet(url: string): Promise<{ status: number; member: string | null } | null> {
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false, timeout: 2000 }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, member: (res.headers['x-member'] as string | undefined) ?? null }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve(null));
  });
}

test.before(
  loud(async () => {
    // 1. The image, through the one build script (reused when its inputs did not change).
    let started = Date.now();
    const build = spawnSync('bash', [join(REPO, 'image-build/build.sh'), 'ci'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 30 * 60_000,
      env: { ...process.env, AMPHORA_IMAGE_REUSE: process.env.AMPHORA_IMAGE_REUSE ?? '1' },
    });
    if (build.status !== 0) throw new Error(`image-build/build.sh ci failed (${build.status}):\n${build.stderr}\n${build.stdout.slice(-3000)}`);
    const tar = build.stdout.trim().split('\n').pop()!;
    const reused = build.stderr.includes('reusing');
    console.log(
      `image: ${reused ? 'reused' : 'built'} ${tar} (${(statSync(tar).size / 1e6).toFixed(0)} MB) in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );

    // 2. Its root filesystem, with /proc, /sys, /dev and the host's /run/netns
    // (the agent runs `ip netns exec` inside the chroot). The root is a mount
    // point of its own, as `ip netns exec` makes / a slave mount.
    started = Date.now();
    mkdirSync(ROOTFS, { recursive: true });
    sh('tar', ['-xf', tar, '-C', ROOTFS, '--numeric-owner']);
    mgmt = createTestNetwork();
    tenant = createTestNetwork();
    sh('mount', ['--bind', ROOTFS, ROOTFS]);
    for (const d of ['proc', 'sys', 'dev', 'run/netns']) mkdirSync(join(ROOTFS, d), { recursive: true });
    sh('mount', ['-t', 'proc', 'proc', join(ROOTFS, 'proc')]);
    sh('mount', ['-t', 'sysfs', 'sysfs', join(ROOTFS, 'sys')]);
    sh('mount', ['--bind', '/dev', join(ROOTFS, 'dev')]);
    sh('mount', ['--rbind', '/run/netns', join(ROOTFS, 'run/netns')]);
    sh('mount', ['--make-rslave', join(ROOTFS, 'run/netns')]);
    console.log(`image: root filesystem ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);

    // 3. What Octavia's config drive puts in place: certificates and amphora-agent.conf.
    const pki = PKI;
    mkdirSync(pki, { recursive: true });
    serverCa = makeCa(pki, 'server-ca');
    const clientCa = makeCa(pki, 'client-ca');
    const server = issue(serverCa, 'amphora', { dnsName: AMPHORA_ID, usage: 'serverAuth' });
    client = issue(clientCa, 'controller', { usage: 'clientAuth' });
    writeFileSync(join(ROOTFS, 'etc/octavia/certs/server.pem'), readFileSync(server.pem), { mode: 0o600 });
    writeFileSync(join(ROOTFS, 'etc/octavia/certs/client_ca.pem'), readFileSync(clientCa.cert), { mode: 0o644 });
    writeFileSync(
      join(ROOTFS, 'etc/octavia/amphora-agent.conf'),
      [
        '[DEFAULT]',
        'debug = False',
        '',
        '[haproxy_amphora]',
        'base_cert_dir = /var/lib/octavia/certs',
        'base_path = /var/lib/octavia',
        'bind_host = ::',
        'bind_port = 9443',
        'haproxy_cmd = /usr/sbin/haproxy',
        'user_log_facility = 0',
        'administrative_log_facility = 1',
        '',
        '[health_manager]',
        'controller_ip_port_list =',
        'heartbeat_interval = 10',
        'heartbeat_key = insecure',
        '',
        '[amphora_agent]',
        'agent_server_ca = /etc/octavia/certs/client_ca.pem',
        'agent_server_cert = /etc/octavia/certs/server.pem',
        'agent_server_network_dir = /etc/octavia/interfaces/',
        'agent_request_read_timeout = 180',
        `amphora_id = ${AMPHORA_ID}`,
        'amphora_udp_driver = keepalived_lvs',
        // No systemd as PID 1 in a chroot: the agent runs haproxy itself, in the tenant namespace.
        'process_manager = direct',
        `network_namespace = ${tenant.netns}`,
        '',
        '[controller_worker]',
        'loadbalancer_topology = SINGLE',
        '',
      ].join('\n'),
      { mode: 0o600 },
    );

    // 4. The agent, as amphora-agent.service starts it: its ExecStart, its
    // capability bounding set (plus CAP_SYS_CHROOT for the chroot itself) and
    // no-new-privileges.
    const execStart = unitSetting('amphora-agent.service', 'ExecStart').split(/\s+/);
    const caps = unitSetting('amphora-agent.service', 'CapabilityBoundingSet')
      .split(/\s+/)
      .map((c) => `+${c.replace(/^CAP_/, '').toLowerCase()}`);
    assert.is(unitSetting('amphora-agent.service', 'NoNewPrivileges'), 'yes');
    agent = spawn(
      'ip',
      ['netns', 'exec', mgmt.netns, 'setpriv', '--no-new-privs', `--bounding-set=-all,${[...caps, '+sys_chroot'].join(',')}`, 'chroot', ROOTFS, ...execStart],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { PATH: SYSTEM_PATH, LANG: 'C.UTF-8', HOME: '/root', NODE_ENV: 'production', AMPHORA_AGENT_LOG_LEVEL: 'info' },
      },
    );
    agent.stdout!.on('data', (d) => {
      agentLog += d;
    });
    agent.stderr!.on('data', (d) => {
      agentLog += d;
    });
    await waitFor("the image's agent to listen", () => agentLog.includes('API listening') || agent!.exitCode !== null, 60_000);
    if (agent.exitCode !== null) throw new Error(`the agent exited (${agent.exitCode}):\n${agentLog}`);

    backend = await new TestBackend('member-1', tenant.hostIp, 18080).start();
  }),
);

test.after(async () => {
  if (agent && agent.exitCode === null) {
    agent.kill('SIGTERM');
    await Promise.race([new Promise((r) => agent!.once('exit', r)), new Promise((r) => setTimeout(r, 5000))]);
  }
  await backend?.stop();
  tenant?.destroy(); // kills haproxy (it outlives the agent by design)
  mgmt?.destroy();
  cleanup();
});

test('the image has the agent, Node.js, haproxy, keepalived and the tools the agent runs', () => {
  const node = sh('chroot', [ROOTFS, '/usr/bin/node', '--version']).trim();
  const haproxy = sh('chroot', [ROOTFS, '/usr/sbin/haproxy', '-v']).split('\n')[0]!;
  // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's own format syntax
  const keepalived = sh('chroot', [ROOTFS, 'dpkg-query', '-W', '-f=${Version}', 'keepalived']);
  console.log(`image: node ${node}, ${haproxy}, keepalived ${keepalived}`);
  assert.match(node, /^v(2[0-9]|[3-9][0-9])\./);
  for (const bin of [
    '/usr/local/bin/amphora-agent',
    '/usr/sbin/haproxy',
    '/usr/sbin/keepalived',
    '/usr/sbin/ipvsadm',
    '/usr/sbin/nft',
    '/usr/bin/socat',
    '/usr/sbin/ip',
    '/usr/bin/arping',
    '/usr/bin/ndisc6',
    '/usr/sbin/sysctl',
    '/usr/sbin/rsyslogd',
    '/usr/bin/openssl',
    '/usr/sbin/modprobe',
    '/var/lib/octavia/ping-wrapper.sh',
  ]) {
    assert.ok(existsSync(join(ROOTFS, bin)), `${bin} missing in the image`);
  }
  assert.ok(existsSync(join(ROOTFS, 'opt/amphora-agent/dist/agent/main.js')));
  assert.ok(existsSync(join(ROOTFS, 'opt/amphora-agent/templates/haproxy/haproxy.cfg.njk')));
  assert.not.ok(existsSync(join(ROOTFS, 'opt/amphora-agent/node_modules/typescript')), 'dev dependencies were bundled');
  assert.ok(enabled('amphora-agent.service'), 'amphora-agent.service not enabled');
  assert.ok(enabled('amphora-netns.service'), 'amphora-netns.service not enabled');
  assert.ok(enabled('rsyslog.service'), 'rsyslog.service not enabled');
  assert.not.ok(enabled('haproxy.service'), 'the packaged haproxy.service is enabled');
  assert.not.ok(enabled('keepalived.service'), 'the packaged keepalived.service is enabled');
  assert.is(readFileSync(join(ROOTFS, 'var/lib/octavia/haproxy-default-user-group.conf'), 'utf8').replace(/\s+/g, ' ').trim(), 'global group nogroup');
});

test("GET /1.0/info over mutual TLS reports the image's haproxy version", async () => {
  const res = await request('GET', '/1.0/info');
  assert.is(res.status, 200, res.text);
  const info = JSON.parse(res.text) as Record<string, string>;
  const version = /HAProxy version (\S+)/.exec(sh('chroot', [ROOTFS, '/usr/sbin/haproxy', '-v']))![1];
  assert.is(info.haproxy_version, version);
  assert.is(info.api_version, '1.0');
  assert.ok(info.keepalived_version, 'no keepalived version');
  assert.ok(info.ipvsadm_version, 'no ipvsadm version');
});

test("a config PUT and a reload: traffic flows through the image's haproxy in the tenant namespace", async () => {
  const config = octaviaStyleConfig({
    lbId: LB_ID,
    baseDir: '/var/lib/octavia',
    bind: `${tenant.nsIp}:8080`,
    members: [{ id: 'member-1', address: backend!.address }],
    connectionLimit: 5000,
  });
  const put = await request('PUT', `/1.0/loadbalancer/${AMPHORA_ID}/${LB_ID}/haproxy`, config);
  assert.is(put.status, 202, put.text);
  const reload = await request('PUT', `/1.0/loadbalancer/${LB_ID}/reload`);
  assert.is(reload.status, 202, reload.text);
  // The member is new: it gets traffic once its health checks passed.
  const reply = await waitFor(
    'a request through haproxy to reach the backend',
    async () => {
      const r = await httpGet(`http://${tenant.nsIp}:8080/`);
      return r?.status === 200 ? r : null;
    },
    20_000,
    200,
  );
  assert.is(reply!.member, 'member-1');
  assert.ok(backend!.requests >= 1);

  const pid = Number(readFileSync(join(ROOTFS, 'var/lib/octavia', LB_ID, `${LB_ID}.pid`), 'utf8').trim());
  assert.is(readlinkSync(`/proc/${pid}/root`), ROOTFS, 'haproxy does not run in the image');
  assert.is(readlinkSync(`/proc/${pid}/exe`), join(ROOTFS, 'usr/sbin/haproxy'));
  assert.is(sh('ip', ['netns', 'identify', String(pid)]).trim(), tenant.netns);
  const served = await request('GET', `/1.0/loadbalancer/${LB_ID}/haproxy`);
  assert.is(served.status, 200);
  assert.is(served.text, config);
});

test('ping-wrapper.sh (PING monitors) answers for a reachable member and fails for an unreachable one', () => {
  const wrapper = '/var/lib/octavia/ping-wrapper.sh';
  const ping = (addr: string) =>
    spawnSync('ip', ['netns', 'exec', tenant.netns, 'chroot', ROOTFS, wrapper, tenant.nsIp, '8080', addr, '80'], {
      env: { PATH: SYSTEM_PATH },
      stdio: 'ignore',
    }).status;
  assert.is(ping(tenant.hostIp), 0);
  assert.is(ping('::1'), 0);
  assert.is.not(ping('192.0.2.1'), 0);
});

test("amphora-netns.service's bring-up line, run in the image: loopback from the lo.json the agent wrote; no Node.js on a first boot; amphora-interface is the same command", () => {
  const line = readFileSync(join(ROOTFS, UNIT_DIR, 'amphora-netns.service'), 'utf8')
    .split('\n')
    .find((l) => l.includes(' interface up all'))!;
  assert.ok(line, 'amphora-netns.service does not bring the interfaces up');
  const script = /^ExecStart=-\/bin\/sh -c '(.*)'$/.exec(line)?.[1];
  assert.ok(script, `not a guarded sh -c line: ${line}`);
  const bringUp = () => spawnSync('chroot', [ROOTFS, '/bin/sh', '-c', script!], { encoding: 'utf8', env: { PATH: SYSTEM_PATH } });
  const run = (what: string, expected: string) => {
    const r = bringUp();
    assert.is(r.status, 0, `${what}: ${r.stdout}${r.stderr}`);
    assert.is(r.stdout.trim(), expected, what);
  };
  run('the config names the interfaces directory', 'lo: up');
  // A first boot: Octavia's config leaves the directory at its default, and no NIC has been plugged yet.
  const conf = join(ROOTFS, 'etc/octavia/amphora-agent.conf');
  const lo = join(ROOTFS, 'etc/octavia/interfaces/lo.json');
  const original = readFileSync(conf, 'utf8');
  const loJson = readFileSync(lo, 'utf8');
  try {
    writeFileSync(
      conf,
      original
        .split('\n')
        .filter((l) => !l.startsWith('agent_server_network_dir'))
        .join('\n'),
    );
    rmSync(lo);
    run('default directory, no interface file (first boot)', '');
    writeFileSync(lo, loJson);
    run('default directory with an interface file (a reboot)', 'lo: up');
  } finally {
    writeFileSync(conf, original);
    writeFileSync(lo, loJson);
  }
  const wrapper = spawnSync('chroot', [ROOTFS, '/usr/local/bin/amphora-interface', 'up', 'lo'], { encoding: 'utf8', env: { PATH: SYSTEM_PATH } });
  assert.is(wrapper.stdout.trim(), 'lo: up', wrapper.stderr);
});

test("systemd-analyze verify passes on the shipped units (the image's systemd and the host's)", () => {
  const units = UNITS.map((u) => join(UNIT_DIR, u));
  const image = spawnSync('chroot', [ROOTFS, 'systemd-analyze', 'verify', ...units], { encoding: 'utf8', env: { PATH: SYSTEM_PATH } });
  assert.is(image.status, 0, image.stderr);
  assert.is(`${image.stdout}${image.stderr}`.trim(), '', 'systemd-analyze (image) printed warnings');
  // The host's systemd checks against the image's tree; other units of the
  // image may use keys this older systemd does not know, ours may not.
  const host = spawnSync('systemd-analyze', ['verify', `--root=${ROOTFS}`, ...units], { encoding: 'utf8', env: { PATH: SYSTEM_PATH } });
  assert.is(host.status, 0, host.stderr);
  const ours = `${host.stdout}${host.stderr}`.split('\n').filter((l) => /amphora-(agent|netns)/.test(l));
  assert.equal(ours, [], 'systemd-analyze (host) complained about our units');
});

test('sysctl, rsyslog and journald settings are valid', () => {
  const sysctl = readFileSync(join(ROOTFS, 'etc/sysctl.d/60-octavia-amphora.conf'), 'utf8');
  const keys = sysctl
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#') && !l.startsWith('-'))
    .map((l) => l.split('=')[0]!.trim());
  assert.ok(keys.includes('net.ipv4.ip_nonlocal_bind') && keys.includes('net.ipv6.ip_nonlocal_bind'));
  assert.ok(keys.includes('net.ipv6.conf.all.ndisc_notify'), 'no unsolicited neighbour advertisements (Debian has no ndsend)');
  assert.not.ok(
    keys.some((k) => k.endsWith('ip_forward') || k.endsWith('.forwarding')),
    'forwarding is for the namespace only',
  );
  for (const k of keys) assert.ok(existsSync(`/proc/sys/${k.replace(/\./g, '/')}`), `unknown sysctl ${k}`);
  const rsyslog = spawnSync('chroot', [ROOTFS, 'rsyslogd', '-N1'], { encoding: 'utf8', env: { PATH: SYSTEM_PATH } });
  assert.is(rsyslog.status, 0, rsyslog.stderr);
  assert.match(readFileSync(join(ROOTFS, 'etc/rsyslog.d/55-octavia-socket.conf'), 'utf8'), /Socket="\/run\/rsyslog\/octavia\/log"/);
  assert.match(readFileSync(join(ROOTFS, 'etc/systemd/journald.conf.d/60-amphora.conf'), 'utf8'), /ForwardToSyslog=yes/);
});

test.run();
