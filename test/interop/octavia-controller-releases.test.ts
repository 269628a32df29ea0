// Interop: what Octavia's controller changed between 11 and 19 that the agent
// must meet, driven through each release's own controller code:
// - 16 and 19 GET /1.0/details in update_amphora_listeners and size nbthread,
//   cpu-map and tune.ssl.cachesize from it;
// - 15 and later write amphora-agent.conf without respawn_count,
//   respawn_interval and use_upstart (11 to 14 still write them);
// - update_amphora_agent_config (PUT /1.0/config) moves the heartbeat to the
//   new health managers, key and interval without an agent restart.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loud } from '../helpers/hooks.js';
import { HAPROXIES, OCTAVIAS, octaviaPython, testDir, type OctaviaUnderTest } from '../helpers/haproxies.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { agentHaproxy, startAgent, type AgentUnderTest } from '../helpers/agent-process.js';
import { OctaviaPeer } from '../helpers/octavia-peer.js';
import { HeartbeatReceiver } from '../helpers/heartbeat-receiver.js';
import { issue, makeCa } from '../helpers/certs.js';
import { waitFor } from '../helpers/load.js';
import { testPorts } from '../helpers/ports.js';

const PORTS = testPorts('octavia-controller-releases');
const DETAILS_AGENT = PORTS.range(2);
const LISTENER_PORT = PORTS.one();
const TARGET_AGENT = PORTS.range(OCTAVIAS.length);
const HEARTBEAT_AGENT = PORTS.range(OCTAVIAS.length);
const OLD_RECEIVER = PORTS.range(OCTAVIAS.length);
const NEW_RECEIVER = PORTS.range(OCTAVIAS.length);

const LB = '7a1d0c5e-0000-4000-8000-0000000000aa';
const LISTENER = '7a1d0c5e-0000-4000-8000-0000000000bb';
const POOL = '7a1d0c5e-0000-4000-8000-0000000000cc';
const HAPROXY = HAPROXIES.find((h) => h.label === 'haproxy-3.0')!; // the amphora image's
const release = (label: string) => OCTAVIAS.find((o) => o.label === label)!;
const FACTS = fileURLToPath(new URL('../../../test/interop/octavia_amphora_facts.py', import.meta.url));
const MAIN = fileURLToPath(new URL('../../agent/main.js', import.meta.url));

/** What Octavia's own agent would report here: os.cpu_count() and /proc/meminfo in kB. */
function octaviaFacts(o: OctaviaUnderTest, meminfo: string): { cpu_count: number; meminfo: Record<string, number> } {
  const [cmd, argv] = octaviaPython(o, FACTS, [meminfo]);
  return JSON.parse(execFileSync(cmd, argv, { encoding: 'utf8' })) as { cpu_count: number; meminfo: Record<string, number> };
}

/** This machine's /proc/meminfo with the memory of a 1 GB amphora. */
function amphoraMeminfo(): string {
  const amphora: Record<string, number> = { MemTotal: 1_000_000, MemFree: 420_000, MemAvailable: 600_000, Buffers: 20_000, Cached: 160_000, SwapCached: 0 };
  return readFileSync('/proc/meminfo', 'utf8').replace(/^(\w+):(\s+)\d+/gm, (line, key: string, space: string) =>
    key in amphora ? `${key}:${space}${amphora[key]}` : line,
  );
}

/**
 * tune.ssl.cachesize as each release's JinjaTemplater derives it from the
 * memory figures (kB) and the global maxconn, or null when it keeps haproxy's
 * default: 16 takes half the spare memory at 200 bytes a block, 19 two fifths
 * at 250 bytes (LP #2119987).
 */
function expectedCacheSize(label: string, mem: { free: number; buffers: number; cached: number }, maxconn: number): number | null {
  const spare = mem.free + mem.buffers + mem.cached - 32 * maxconn;
  if (label === 'octavia-16') {
    const kb = Math.floor(spare / 2);
    return kb > 4000 ? kb * 5 : null;
  }
  const kb = Math.floor((spare * 2) / 5);
  return kb > 5000 ? kb * 4 : null;
}

/** The controller's peer configured like a worker for this agent; `extra` adds option groups. */
async function setupPeer(
  o: OctaviaUnderTest,
  agent: Pick<AgentUnderTest, 'amphoraId' | 'port' | 'client' | 'serverCa' | 'basePath' | 'certDir'>,
  extra: Record<string, Record<string, unknown>> = {},
): Promise<OctaviaPeer> {
  const peer = new OctaviaPeer(o);
  const a = await peer.request('setup', {
    amphora_id: agent.amphoraId,
    lb_network_ip: '127.0.0.1',
    overrides: {
      ...extra,
      haproxy_amphora: {
        client_cert: agent.client.pem,
        server_ca: agent.serverCa.cert,
        bind_port: agent.port,
        bind_host: '127.0.0.1',
        base_path: agent.basePath,
        base_cert_dir: agent.certDir,
        connection_max_retries: 3,
        connection_retry_interval: 1,
        ...extra.haproxy_amphora,
      },
    },
  });
  assert.ok(a.ok, `setup: ${a.message}\n${peer.stderr}`);
  return peer;
}

// 1. /1.0/details as the 16 and 19 drivers use it for every listener update.
['octavia-16', 'octavia-19'].forEach((label, i) => {
  const t = suite(`${label}: update_amphora_listeners renders nbthread, cpu-map and ssl cache from /1.0/details`);
  let net: TestNetwork;
  let agent: AgentUnderTest;
  let peer: OctaviaPeer;
  let dir: string;

  t.before(
    loud(async () => {
      net = createTestNetwork();
      dir = await testDir('sec3-details');
      // The amphora image activates tuned's "amphora" profile (cpu-pinning); the
      // agent runs in a mount namespace whose /etc has it, so nothing changes
      // on this machine.
      mkdirSync(join(dir, 'etc-upper', 'tuned'), { recursive: true });
      mkdirSync(join(dir, 'etc-work'));
      writeFileSync(join(dir, 'etc-upper', 'tuned', 'active_profile'), 'amphora\n');
      // ...and sees an amphora's memory: this machine's free gigabytes would size
      // a session cache of ten million entries, which haproxy -c takes longer to
      // allocate than the controller waits for the upload (seen under load).
      writeFileSync(join(dir, 'meminfo'), amphoraMeminfo());
      const launcher = [
        'unshare',
        '-m',
        'sh',
        '-c',
        `mount --make-rprivate / && mount -t overlay overlay -o lowerdir=/etc,upperdir=${dir}/etc-upper,workdir=${dir}/etc-work /etc ` +
          `&& mount --bind ${dir}/meminfo /proc/meminfo && exec "$@"`,
        'sh',
      ];
      agent = await startAgent(HAPROXY, dir, net.netns, DETAILS_AGENT(i), undefined, undefined, launcher);
      const storage = join(dir, 'cert-store');
      mkdirSync(storage);
      peer = await setupPeer(release(label), agent, { certificates: { cert_manager: 'local_cert_manager', storage_path: storage } });
    }),
  );

  t.after(async () => {
    peer?.close();
    await agent?.stop();
    net?.destroy();
  });

  t('the driver GETs /1.0/details; the uploaded config pins haproxy to cpu_count - 1 threads and sizes the cache from memory in kB', async () => {
    const cert = issue(makeCa(dir, 'tenant-ca'), 'www', { dnsName: 'www.example.org', usage: 'serverAuth' });
    const a = await peer.request('update_listeners', {
      lb_id: LB,
      listener_id: LISTENER,
      pool_id: POOL,
      vip: net.nsIp,
      port: LISTENER_PORT,
      members: [],
      certificate: readFileSync(cert.cert, 'utf8'),
      private_key: readFileSync(cert.key, 'utf8'),
    });
    assert.ok(a.ok, `update_amphora_listeners: ${a.exception}: ${a.message}\n${a.trace}`);
    const details = (a.result as { details: { cpu_count: number; memory: Record<string, number>; active_tuned_profiles: string } | null }).details;
    assert.ok(details, 'the driver did not GET /1.0/details');
    const facts = octaviaFacts(release(label), join(dir, 'meminfo'));

    // Octavia's meaning: os.cpu_count() and /proc/meminfo in kB.
    assert.is(details.cpu_count, facts.cpu_count);
    assert.is(details.memory.total, facts.meminfo.MemTotal);
    assert.is(details.active_tuned_profiles, 'amphora');

    const config = readFileSync(agentHaproxy(agent, LB).files.config, 'utf8');
    const global = config.slice(config.indexOf('global'), config.indexOf('defaults'));
    if (facts.cpu_count > 1) {
      assert.match(global, new RegExp(`^\\s*nbthread ${facts.cpu_count - 1}$`, 'm'));
      assert.match(global, new RegExp(`^\\s*cpu-map auto:1/1-${facts.cpu_count - 1} 1-${facts.cpu_count - 1}$`, 'm'));
    } else {
      assert.not.match(global, /nbthread/);
    }
    const maxconn = Number(/^\s*maxconn (\d+)$/m.exec(global)?.[1]);
    const rendered = /^\s*tune\.ssl\.cachesize (\d+)$/m.exec(global);
    const fromDetails = expectedCacheSize(label, details.memory as { free: number; buffers: number; cached: number }, maxconn);
    const fromOctavia = expectedCacheSize(label, { free: facts.meminfo.MemFree!, buffers: facts.meminfo.Buffers!, cached: facts.meminfo.Cached! }, maxconn);
    assert.ok(fromOctavia !== null, 'this machine has enough memory for a cache size');
    assert.ok(rendered, `no tune.ssl.cachesize in:\n${global}`);
    assert.is(Number(rendered![1]), fromDetails);
    // Free memory moves between the two readings; kB against bytes would be 1024 times off.
    const drift = Math.abs(Number(rendered![1]) - fromOctavia!) / fromOctavia!;
    assert.ok(drift < 0.05, `cachesize ${rendered![1]} vs ${fromOctavia} from Octavia's own /proc/meminfo reading (${(drift * 100).toFixed(1)}% apart)`);

    // The config really runs: the driver reloaded it (haproxy started, pinned).
    await waitFor(
      'haproxy with the uploaded config',
      async () => {
        const r = await peer.request('call', { method: 'get_all_listeners', params: [] });
        return r.ok && JSON.stringify(r.result).includes('ACTIVE');
      },
      30_000,
    );
  });

  t.run();
});

// 2. amphora-agent.conf as each release's own AgentJinjaTemplater writes it.
OCTAVIAS.forEach((o, i) => {
  const t = suite(`${o.label}: the agent starts on the amphora-agent.conf the controller generates`);
  let child: ChildProcess | null = null;
  let peer: OctaviaPeer;

  t.after(async () => {
    peer?.close();
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child!.once('exit', r));
    }
  });

  t('AgentJinjaTemplater.build_agent_config -> the agent starts -> GET /1.0/info answers the controller', async () => {
    const dir = await testDir('sec3-agentconf');
    const pki = join(dir, 'pki');
    mkdirSync(pki);
    const serverCa = makeCa(pki, 'server-ca');
    const clientCa = makeCa(pki, 'client-ca');
    const amphoraId = `a1b2c3d4-0000-4000-8000-00000000002${i}`;
    const server = issue(serverCa, 'agent', { dnsName: amphoraId, usage: 'serverAuth' });
    const client = issue(clientCa, 'controller', { usage: 'clientAuth' });
    const target = { amphoraId, port: TARGET_AGENT(i), client, serverCa, basePath: join(dir, 'lib'), certDir: join(dir, 'lib', 'certs') };
    peer = await setupPeer(o, target, {
      haproxy_amphora: { haproxy_cmd: HAPROXY.command.join(' ') },
      amphora_agent: { agent_server_ca: clientCa.cert, agent_server_cert: server.pem, agent_server_network_dir: join(dir, 'interfaces') },
      health_manager: { controller_ip_port_list: [], heartbeat_key: 'insecure' },
    });
    const rendered = await peer.request('agent_config', { topology: 'SINGLE' });
    assert.ok(rendered.ok, `build_agent_config: ${rendered.message}`);
    const text = rendered.result as string;
    // The premise: 11 still writes the upstart-era options, 15 and later do not.
    if (o.label === 'octavia-11') assert.match(text, /^respawn_count = \d+$/m);
    else assert.not.match(text, /respawn_count|respawn_interval|use_upstart/);

    const file = join(dir, 'amphora-agent.conf');
    writeFileSync(file, text);
    let out = '';
    child = spawn(process.execPath, [MAIN, '--config-file', file], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, AMPHORA_AGENT_LOG_LEVEL: 'info' },
    });
    child.stdout!.on('data', (d) => {
      out += d;
    });
    child.stderr!.on('data', (d) => {
      out += d;
    });
    await waitFor('the agent to listen', () => out.includes('API listening') || child!.exitCode !== null, 30_000);
    assert.is(child.exitCode, null, `the agent refused ${o.label}'s amphora-agent.conf:\n${out}\n--- conf ---\n${text}`);
    const info = (await peer.call('get_info')) as Record<string, string>;
    assert.is(info.api_version, '1.0');
    assert.match(info.haproxy_version!, /^\d+\.\d+/);
  });

  t.run();
});

// 3. update_amphora_agent_config: the heartbeat follows the new config at once.
OCTAVIAS.forEach((o, i) => {
  const t = suite(`${o.label}: update_amphora_agent_config moves the heartbeat without a restart`);
  let net: TestNetwork;
  let agent: AgentUnderTest;
  let peer: OctaviaPeer;
  let oldReceiver: HeartbeatReceiver;
  let newReceiver: HeartbeatReceiver;

  t.before(
    loud(async () => {
      net = createTestNetwork();
      const dir = await testDir('sec3-hbconf');
      oldReceiver = new HeartbeatReceiver(OLD_RECEIVER(i), 'old-key', o);
      newReceiver = new HeartbeatReceiver(NEW_RECEIVER(i), 'new-key', o);
      await Promise.all([oldReceiver.waitReady(), newReceiver.waitReady()]);
      // A long old interval: a change that only applies after it would show.
      agent = await startAgent(HAPROXY, dir, net.netns, HEARTBEAT_AGENT(i), [
        `controller_ip_port_list = 127.0.0.1:${oldReceiver.port}`,
        'heartbeat_key = old-key',
        'heartbeat_interval = 60',
      ]);
      peer = await setupPeer(o, agent, {
        haproxy_amphora: { haproxy_cmd: HAPROXY.command.join(' ') },
        amphora_agent: {
          agent_server_ca: agent.clientCa.cert,
          agent_server_cert: /^agent_server_cert = (.+)$/m.exec(readFileSync(agent.configFile, 'utf8'))![1],
          agent_server_network_dir: join(dir, 'interfaces'),
        },
        health_manager: { controller_ip_port_list: [`127.0.0.1:${newReceiver.port}`], heartbeat_key: 'new-key', heartbeat_interval: 1 },
      });
    }),
  );

  t.after(async () => {
    peer?.close();
    oldReceiver?.stop();
    newReceiver?.stop();
    await agent?.stop();
    net?.destroy();
  });

  t('new controller_ip_port_list, heartbeat_key and heartbeat_interval apply at the PUT', async () => {
    await waitFor('the first heartbeat at the old health manager', () => oldReceiver.accepted().length > 0, 10_000);
    const rendered = await peer.request('agent_config', { topology: 'SINGLE' });
    assert.ok(rendered.ok, `build_agent_config: ${rendered.message}`);
    const text = rendered.result as string;
    assert.match(text, new RegExp(`controller_ip_port_list = 127.0.0.1:${newReceiver.port}`));
    const put = await peer.request('driver', { method: 'update_amphora_agent_config', params: [text] });
    assert.ok(put.ok, `update_amphora_agent_config: ${put.exception}: ${put.message}`);
    const at = Date.now();

    await waitFor('4 heartbeats at the new health manager', () => newReceiver.accepted(at).length >= 4, 10_000);
    const beats = newReceiver.received.filter((r) => r.at >= at);
    assert.ok(beats[0]!.at - at < 1500, `first heartbeat to the new health manager ${beats[0]!.at - at} ms after the PUT`);
    assert.ok(
      beats.every((r) => r.ok),
      `rejected with the new key: ${beats
        .filter((r) => !r.ok)
        .map((r) => r.error)
        .join('; ')}`,
    );
    const gaps = beats.slice(1).map((r, k) => r.at - beats[k]!.at);
    assert.ok(
      gaps.every((g) => g > 700 && g < 1600),
      `intervals ${gaps.join(', ')} ms, not about 1 s`,
    );
    assert.is(oldReceiver.received.filter((r) => r.at > at).length, 0, 'the old health manager still gets heartbeats');
    assert.is(beats[0]!.message!.id, agent.amphoraId);
  });

  t.run();
});
