// Octavia in a box, the control plane alone (issue 27): MariaDB, RabbitMQ and
// Octavia 19's API, worker, health manager and housekeeping from Debian's
// packages, in a network namespace of their own (test/helpers/octavia-box/
// control-plane.ts). No cloud: the create of a load balancer must reach the
// worker and fail there.
//
// The root filesystem is the release matrix's (test/rig/prepare.sh).
//
//   node dist/test/run.js octavia-box-control-plane
//   (AMPHORA_OCTAVIA_BOX_SUITE=trixie for Octavia 16)
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { testDir } from '../helpers/haproxies.js';
import { loud } from '../helpers/hooks.js';
import { waitFor } from '../helpers/load.js';
import { ControlPlane } from '../helpers/octavia-box/control-plane.js';

const NETNS = `aatb-cp${process.pid}`;
/** sid (Octavia 19) unless AMPHORA_OCTAVIA_BOX_SUITE=trixie (Octavia 16). */
const SUITE = process.env.AMPHORA_OCTAVIA_BOX_SUITE === 'trixie' ? 'trixie' : 'sid';
const PROJECT = 'e5e5e5e5e5e54e5e8e5e5e5e5e5e5e5e';
/** Any network: Octavia's no-op network driver makes one up for any id (ids must be UUIDs). */
const VIP_NETWORK = 'a0a0a0a0-0000-4000-8000-0000000000b0';

function ip(...args: string[]): void {
  execFileSync('ip', args, { stdio: 'ignore' });
}

function removeNetns(): void {
  try {
    ip('netns', 'del', NETNS);
  } catch {
    // not there
  }
}

const test = suite(`Octavia in a box: the control plane (${SUITE === 'sid' ? 'Octavia 19' : 'Octavia 16'}, no cloud)`);
let plane: ControlPlane | null = null;
let state = '';

test.before(
  loud(async () => {
    removeNetns();
    process.on('exit', removeNetns);
    // The control plane's address on a bridge without ports (this kernel has no dummy interfaces).
    ip('netns', 'add', NETNS);
    ip('-n', NETNS, 'link', 'set', 'lo', 'up');
    ip('-n', NETNS, 'link', 'add', 'aatb-mgmt', 'type', 'bridge');
    ip('-n', NETNS, 'addr', 'add', '172.31.0.2/24', 'dev', 'aatb-mgmt');
    ip('-n', NETNS, 'link', 'set', 'aatb-mgmt', 'up');
    state = await testDir('octavia-box');
    const started = Date.now();
    plane = await ControlPlane.start({
      netns: NETNS,
      stateDir: state,
      suite: SUITE,
      // Nobody listens there: every call of the box's compute driver fails.
      cloudSocket: join(state, 'no-cloud.sock'),
      // The API validates the VIP network through the network driver before
      // anything reaches the worker; Octavia's own no-op driver lets the
      // create through, and the box's compute driver (no cloud) fails it in the worker.
      set: { 'controller_worker.network_driver': 'network_noop_driver' },
    });
    const mem = plane.memory();
    const kib = (n: number) => `${(n / 1024).toFixed(0)} MiB`;
    console.log(
      `[octavia-box] Octavia ${plane.ready.octavia_version} control plane ready in ${plane.ready.startup_seconds} s` +
        ` (migrations ${plane.ready.migration_seconds} s; ${JSON.stringify(plane.ready.timings)}; ${((Date.now() - started) / 1000).toFixed(1)} s from the test's side);` +
        ` PSS ${kib(mem.total)}: ${Object.entries(mem.byService)
          .map(([s, n]) => `${s} ${kib(n)}`)
          .join(', ')}`,
    );
  }),
);

test.after(async () => {
  await plane?.stop();
  removeNetns();
  // MariaDB's datadir and the logs: about 80 MiB a run.
  if (state) rmSync(state, { recursive: true, force: true });
});

test('GET /v2/lbaas/loadbalancers: 200, no load balancers', async () => {
  const r = await plane!.request('GET', '/v2/lbaas/loadbalancers');
  assert.is(r.status, 200, JSON.stringify(r.body));
  assert.equal((r.body as { loadbalancers: unknown[] }).loadbalancers, []);
});

test('a load balancer created through the API reaches the worker, which fails it without a cloud', async () => {
  const r = await plane!.request('POST', '/v2/lbaas/loadbalancers', {
    loadbalancer: { name: 'box-smoke', project_id: PROJECT, vip_network_id: VIP_NETWORK },
  });
  assert.is(r.status, 201, JSON.stringify(r.body));
  const lb = (r.body as { loadbalancer: { id: string; provisioning_status: string } }).loadbalancer;
  assert.is(lb.provisioning_status, 'PENDING_CREATE');
  // Only the worker's create flow moves a load balancer out of
  // PENDING_CREATE: to ERROR when the compute driver cannot reach the cloud.
  const status = await waitFor(
    'the worker to fail the create',
    async () => {
      const g = await plane!.request('GET', `/v2/lbaas/loadbalancers/${lb.id}`);
      const s = (g.body as { loadbalancer: { provisioning_status: string } }).loadbalancer.provisioning_status;
      return s === 'PENDING_CREATE' ? null : s;
    },
    120_000,
    1000,
  );
  assert.is(status, 'ERROR');
  assert.ok(plane!.logTail('octavia-worker', 2000).includes(lb.id), 'the worker logged the load balancer');
});

test('stop() leaves no process behind', async () => {
  const before = plane!.processes().length;
  const started = Date.now();
  await plane!.stop();
  console.log(`[octavia-box] stopped ${before} processes in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  assert.ok(before >= 7, `${before} processes while running`);
  assert.equal(plane!.processes(), []);
  const left = execFileSync('ip', ['netns', 'pids', NETNS], { encoding: 'utf8' }).trim();
  assert.is(left, '', `still in ${NETNS}: ${left}`);
});

test.run();
