// Octavia in a box for a person: `npm run octavia-box` starts Octavia's real
// control plane, the cloud and two members, prints how to reach the v2 API,
// and keeps running until Ctrl-C, which takes everything down again.
// (The tests use the same pieces: test/helpers/octavia-box/.)
import { MemberBackend } from './helpers/octavia-box/member-backend.js';
import { OctaviaBox, PROJECT_ID, TENANT_SUBNET_ID } from './helpers/octavia-box/octavia-box.js';
import type { Suite } from './helpers/octavia-box/control-plane.js';

const MEMBER_PORT = 8080;
const suite = (process.env.AMPHORA_OCTAVIA_BOX_SUITE ?? 'sid') as Suite;

console.log(`Starting Octavia in a box (${suite}); the first start builds its root filesystem and the CI image (several minutes)...`);
const box = await OctaviaBox.start({ suite });
const members = [];
for (const n of [0, 1]) members.push(await MemberBackend.start(box.box.member(n), MEMBER_PORT, 'ready', `m${n}`));

const api = box.plane.apiUrl;
const inBox = `ip netns exec ${box.box.netns}`;
const create = JSON.stringify({
  loadbalancer: {
    name: 'demo',
    project_id: PROJECT_ID,
    vip_subnet_id: TENANT_SUBNET_ID,
    listeners: [
      {
        name: 'demo-http',
        protocol: 'HTTP',
        protocol_port: 80,
        default_pool: {
          // A fully populated create needs every pool named.
          name: 'demo-pool',
          protocol: 'HTTP',
          lb_algorithm: 'ROUND_ROBIN',
          healthmonitor: { type: 'HTTP', delay: 2, timeout: 1, max_retries: 2, url_path: '/healthz' },
          members: members.map((m) => ({ address: m.member.ip, protocol_port: MEMBER_PORT })),
        },
      },
    ],
  },
});
console.log(`
Octavia ${box.plane.ready.octavia_version} is up: API ${api} (no auth) in network namespace ${box.box.netns}.
Amphorae boot from the CI image with this checkout's agent; members m0 and m1 answer on ${members.map((m) => `${m.member.ip}:${MEMBER_PORT}`).join(' and ')}.

Create a load balancer, watch it go ACTIVE, then send traffic to its VIP:
  ${inBox} curl -s -X POST -H 'Content-Type: application/json' ${api}/v2/lbaas/loadbalancers -d '${create}'
  ${inBox} curl -s ${api}/v2/lbaas/loadbalancers
  ${inBox} curl -s http://<vip_address>/

Logs: the control plane's in ${box.box.stateDir}/control-plane/logs, the cloud's in ${box.box.stateDir}/cloud.log.
Ctrl-C stops everything.`);
// Ctrl-C: the box's exit handlers stop the control plane, the amphorae, the
// members and the namespaces (box-network.ts, control-plane.ts); the cloud's
// socket keeps this process running until then.
