// Heartbeats as Octavia's health manager receives them: its own receiver code
// (UDPStatusGetter + status_message) decodes the datagrams, checks the HMAC,
// and the statuses and counters are what haproxy really reports.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { loud } from '../helpers/hooks.js';
import dgram from 'node:dgram';
import { kill } from 'node:process';
import { readFileSync } from 'node:fs';
import { INTEROP_PAIRS, testDir } from '../helpers/haproxies.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { TestBackend } from '../helpers/backend.js';
import { LoadGenerator, sleep, waitFor } from '../helpers/load.js';
import { agentHaproxy, startAgent, type AgentUnderTest } from '../helpers/agent-process.js';
import { testPorts } from '../helpers/ports.js';
import { OctaviaPeer } from '../helpers/octavia-peer.js';
import { HeartbeatReceiver } from '../helpers/heartbeat-receiver.js';
import { masterCommand, workerCommand } from '../../agent/haproxy/process/master-cli.js';
import { encodeHeartbeat } from '../../agent/health/envelope.js';

const PORTS = testPorts('heartbeat');
const AGENT = PORTS.range(INTEROP_PAIRS.length);
const [M1, M2] = [PORTS.one(), PORTS.one()];

const LB = '5e5e5e5e-0000-4000-8000-0000000000aa';
const LISTENER = '5e5e5e5e-0000-4000-8000-0000000000bb';
const POOL = '5e5e5e5e-0000-4000-8000-0000000000cc';
const POOL_KEY = `${POOL}:${LISTENER}`;
const KEY = 'heartbeat-test-key';
const INTERVAL_MS = 1000;

INTEROP_PAIRS.forEach(({ haproxy: h, octavia: release }, i) => {
  const t = suite(`heartbeats to Octavia's receiver (${release.label}, ${h.label})`);
  let net: TestNetwork;
  let agent: AgentUnderTest;
  let peer: OctaviaPeer;
  let receiver: HeartbeatReceiver;
  let members: TestBackend[];
  const masterSocket = () => agentHaproxy(agent, LB).socket;
  const memberStatus = (name: string) => (m: NonNullable<ReturnType<HeartbeatReceiver['accepted']>[number]>) => m.pools[POOL_KEY]?.members[name] ?? '';

  t.before(
    loud(async () => {
      net = createTestNetwork();
      const dir = await testDir('heartbeat');
      members = await Promise.all([new TestBackend('m1', net.hostIp, M1).start(), new TestBackend('m2', net.hostIp, M2).start()]);
      receiver = new HeartbeatReceiver(25700 + i, KEY, release);
      await receiver.waitReady();
      agent = await startAgent(h, dir, net.netns, AGENT(i), [
        `controller_ip_port_list = 127.0.0.1:${receiver.port}`,
        `heartbeat_interval = ${INTERVAL_MS / 1000}`,
        `heartbeat_key = ${KEY}`,
      ]);
      peer = new OctaviaPeer();
      const setup = await peer.request('setup', {
        amphora_id: agent.amphoraId,
        lb_network_ip: '127.0.0.1',
        overrides: {
          haproxy_amphora: {
            client_cert: agent.client.pem,
            server_ca: agent.serverCa.cert,
            bind_port: agent.port,
            base_path: agent.basePath,
            base_cert_dir: agent.certDir,
            connection_max_retries: 3,
            connection_retry_interval: 1,
          },
        },
      });
      assert.ok(setup.ok, setup.message);
      const info = (await peer.call('get_info')) as { haproxy_version: string };
      const config = await peer.request('render', {
        lb_id: LB,
        listener_id: LISTENER,
        pool_id: POOL,
        vip: net.nsIp,
        port: 8080,
        haproxy_version: info.haproxy_version.split('.').slice(0, 2).join('.'),
        monitor: { delay: 1, timeout: 1, fall: 2, rise: 2, path: '/healthz' },
        members: members.map((m) => ({ id: m.name, address: m.host, port: m.port })),
      });
      await peer.call('upload_config', LB, config.result);
      await peer.call('reload_listener', LB).catch((err: Error) => {
        throw new Error(`${err.message}\nlaunch log:\n${readFileSync(agentHaproxy(agent, LB).files.launchLog, 'utf8')}`);
      });
    }),
  );

  t.after(async () => {
    peer?.close();
    await agent?.stop();
    receiver?.stop();
    await Promise.all((members ?? []).map((m) => m.stop()));
    net?.destroy();
  });

  t("Octavia's receiver accepts the datagrams: version 3, the amphora id, listener OPEN, members UP", async () => {
    const msg = (await waitFor(
      'a heartbeat with both members UP',
      () => receiver.accepted().find((m) => memberStatus('m1')(m) === 'UP' && memberStatus('m2')(m) === 'UP'),
      15_000,
    ))!;
    assert.is(msg.id, agent.amphoraId);
    assert.is(msg.ver, 3);
    assert.is(msg.listeners[LISTENER]?.status, 'OPEN');
    assert.is(msg.pools[POOL_KEY]?.status, 'UP');
    const seqs = receiver.accepted().map((m) => m.seq);
    assert.ok(
      seqs.every((s, k) => k === 0 || s > seqs[k - 1]!),
      'sequence numbers increase',
    );
  });

  t('stats counters grow with real traffic (deltas add up to the requests sent)', async () => {
    const since = Date.now();
    const load = new LoadGenerator(`http://${net.nsIp}:8080/`, 100).start();
    await sleep(1500);
    await load.stop();
    const sent = load.records.length;
    await waitFor(
      'the deltas to cover the traffic',
      () => receiver.accepted(since).reduce((s, m) => s + (m.listeners[LISTENER]?.stats.totconns ?? 0), 0) >= sent,
      5000,
    );
    const rx = receiver.accepted(since).reduce((s, m) => s + (m.listeners[LISTENER]?.stats.rx ?? 0), 0);
    assert.ok(rx > sent * 50, `rx delta ${rx} bytes for ${sent} requests`);
  });

  t('a member whose check fails shows DOWN within two heartbeat intervals of haproxy marking it down', async () => {
    await members[1]!.setMode('not-ready');
    const downAt = await waitFor(
      'haproxy to mark m2 down',
      async () => {
        const stat = await workerCommand(masterSocket(), 'show stat', 2000);
        return stat.split('\n').some((l) => l.startsWith(`${POOL_KEY},m2,`) && l.split(',')[17]!.startsWith('DOWN')) ? Date.now() : 0;
      },
      10_000,
      20,
    );
    await waitFor('a heartbeat with m2 DOWN', () => receiver.accepted().some((m) => memberStatus('m2')(m).startsWith('DOWN')), 5000, 20);
    const seenAt = receiver.received.find((r) => r.ok && r.message && memberStatus('m2')(r.message).startsWith('DOWN'))!.at;
    assert.ok(seenAt - downAt <= 2 * INTERVAL_MS + 300, `DOWN reported ${seenAt - downAt} ms after haproxy marked it`);
    await members[1]!.setMode('ready');
  });

  t('admin down shows MAINT, weight 0 shows DRAIN', async () => {
    await workerCommand(masterSocket(), `set server ${POOL_KEY}/m1 state maint`);
    await waitFor('MAINT', () => receiver.accepted().some((m) => memberStatus('m1')(m) === 'MAINT'), 5000);
    await workerCommand(masterSocket(), `set server ${POOL_KEY}/m1 state ready`);
    await workerCommand(masterSocket(), `set server ${POOL_KEY}/m1 weight 0`);
    await waitFor('DRAIN', () => receiver.accepted().some((m) => memberStatus('m1')(m) === 'DRAIN'), 8000);
    await workerCommand(masterSocket(), `set server ${POOL_KEY}/m1 weight 1`);
  });

  t("a datagram signed with another key is rejected by Octavia's code", async () => {
    const before = receiver.received.filter((r) => !r.ok).length;
    const sock = dgram.createSocket('udp4');
    const wrong = await encodeHeartbeat({ id: agent.amphoraId, seq: 0, ver: 3, listeners: {}, pools: {} }, 'wrong-key');
    await new Promise<void>((r) => sock.send(wrong, receiver.port, '127.0.0.1', () => r()));
    sock.close();
    await waitFor('the rejection', () => receiver.received.filter((r) => !r.ok).length > before, 5000);
    assert.match(receiver.received.filter((r) => !r.ok).pop()!.error!, /HMAC/);
  });

  t('the loop survives a haproxy crash (the agent restarts haproxy) and an unreachable manager; PUT /1.0/config changes the destinations', async () => {
    const master = Number(readFileSync(agentHaproxy(agent, LB).files.pidFile, 'utf8'));
    const workers = (await masterCommand(masterSocket(), 'show proc')).match(/^\d+/gm)!.map(Number);
    for (const pid of workers) kill(pid, 'SIGKILL');
    kill(master, 'SIGKILL');
    const afterCrash = Date.now();
    // The agent's watchdog starts haproxy again (systemd's Restart=always in an image),
    // and heartbeats go on meanwhile.
    await waitFor(
      'haproxy restarted by the agent',
      () => {
        const pid = Number(readFileSync(agentHaproxy(agent, LB).files.pidFile, 'utf8'));
        return pid !== master;
      },
      10_000,
      100,
    );
    await waitFor(
      'the listener in a heartbeat after the restart',
      () => receiver.accepted(Date.now() - 500).some((m) => m.listeners[LISTENER]?.status === 'OPEN'),
      10_000,
    );
    // The restart can be quicker than one interval: wait for the loop to go on rather than sample it once.
    await waitFor('heartbeats to go on after the crash', () => receiver.accepted(afterCrash).length >= 2, 5000);
    // A first destination that refuses (nothing listens on port 9): every other beat goes there.
    const conf = readFileSync(agent.configFile, 'utf8').replace(
      /controller_ip_port_list = .*/,
      `controller_ip_port_list = 127.0.0.1:9, 127.0.0.1:${receiver.port}`,
    );
    await peer.call('update_agent_config', conf);
    const since = Date.now();
    await sleep(4 * INTERVAL_MS + 500);
    const got = receiver.accepted(since).length;
    assert.ok(got >= 1 && got <= 3, `${got} heartbeats in 4 intervals with one of two destinations reachable`);
  });

  t.run();
});
