// bench/heartbeat-api: does building heartbeats for a 5,000-member load
// balancer show in the API's latency? One agent process, the load balancer
// created through API 2.0, GET /1.0/info at a steady 50 requests per second
// on a kept-alive connection for BENCH_SECONDS, twice in the same run:
// heartbeats off, then every second (heartbeat_interval = 1, ten times
// Octavia's default rate) to a local UDP socket. Prints p50/p99/max of both.
// Run: sudo npm run bench:heartbeat-api
import dgram from 'node:dgram';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import { HAPROXIES, testDir } from '../test/helpers/haproxies.js';
import { createTestNetwork } from '../test/helpers/netns.js';
import { startAgent } from '../test/helpers/agent-process.js';
import { apiRequest } from '../test/helpers/api-client.js';

const MEMBERS = Number(process.env.BENCH_MEMBERS ?? 5000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const RATE = 50;

function spec(vip: string) {
  return {
    id: 'lb-hb',
    vip_address: vip,
    listeners: [
      {
        id: 'l-http',
        protocol: 'HTTP',
        protocol_port: 8080,
        connection_limit: 1000,
        default_pool: {
          id: 'p-web',
          protocol: 'HTTP',
          lb_algorithm: 'ROUND_ROBIN',
          healthmonitor: { type: 'TCP', delay: 30, timeout: 3, max_retries: 2 },
          members: Array.from({ length: MEMBERS }, (_, i) => ({ id: `m${i}`, address: `10.99.${Math.floor(i / 250)}.${(i % 250) + 1}`, protocol_port: 80 })),
        },
      },
    ],
  };
}

const net = createTestNetwork();
const receiver = dgram.createSocket('udp4');
let datagrams = 0;
receiver.on('message', () => {
  datagrams++;
});
await new Promise<void>((r) => receiver.bind(0, '127.0.0.1', () => r()));
const udpPort = (receiver.address() as { port: number }).port;
try {
  const results: string[] = [];
  for (const heartbeats of [false, true]) {
    const dir = await testDir('bench-hb-api');
    const agent = await startAgent(
      HAPROXIES[0]!,
      dir,
      net.netns,
      19950 + Number(heartbeats),
      heartbeats ? [`controller_ip_port_list = 127.0.0.1:${udpPort}`, 'heartbeat_interval = 1', 'heartbeat_key = bench'] : ['controller_ip_port_list ='],
    );
    try {
      const created = await apiRequest(agent, 'PUT', '/2.0/loadbalancers/lb-hb', { body: spec(net.nsIp) });
      if (created.status !== 201) throw new Error(`create: ${created.status} ${created.text}`);
      const connection = new https.Agent({ keepAlive: true, maxSockets: 1 });
      await apiRequest(agent, 'GET', '/1.0/info', { connection });
      const before = datagrams;
      const latencies: number[] = [];
      const end = performance.now() + SECONDS * 1000;
      for (let next = performance.now(); next < end; next += 1000 / RATE) {
        await new Promise((r) => setTimeout(r, Math.max(0, next - performance.now())));
        const t = performance.now();
        const res = await apiRequest(agent, 'GET', '/1.0/info', { connection });
        if (res.status !== 200) throw new Error(`info: ${res.status}`);
        latencies.push(performance.now() - t);
      }
      connection.destroy();
      latencies.sort((a, b) => a - b);
      const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!.toFixed(1);
      results.push(
        `heartbeats ${heartbeats ? 'every 1 s' : 'off      '}  ${String(datagrams - before).padStart(3)} sent   p50 ${at(0.5)} ms   p99 ${at(0.99)} ms   max ${at(1)} ms   (${latencies.length} requests)`,
      );
      await apiRequest(agent, 'DELETE', '/2.0/loadbalancers/lb-hb');
    } finally {
      await agent.stop();
    }
  }
  console.log(`bench/heartbeat-api: GET /1.0/info at ${RATE}/s for ${SECONDS} s, one load balancer with ${MEMBERS} members, ${HAPROXIES[0]!.label}`);
  for (const r of results) console.log(r);
} finally {
  receiver.close();
  net.destroy();
}
