// Octavia in a box, whole: the CI image's root filesystem (amphorae), the
// box network, the cloud (Nova and Neutron) and Octavia's real control plane
// (API, worker, health manager, housekeeping), started together and torn
// down together; plus the v2 API as a tenant and an operator call it. See
// test/octavia-box/PROTOCOL.md for the design.
import { execFile, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ciImageTar, ImageRoot } from '../amphora-container.js';
import { waitFor } from '../load.js';
import { Box } from './box-network.js';
import { TENANT_SUBNET_ID } from './cloud-state.js';
import { type AgentKind, Cloud } from './cloud.js';
import { ControlPlane, type Suite } from './control-plane.js';

export { TENANT_SUBNET_ID, type AgentKind };
const run = promisify(execFile);
const REFERENCE_ROOTFS = fileURLToPath(new URL('../../../../test/octavia-box/reference-rootfs.sh', import.meta.url));
/** The tenant the box's load balancers belong to (noauth: the project is named in each request body). */
export const PROJECT_ID = 'e3cd678b11784734bc366148aa37580e';

export type Json = Record<string, unknown>;

export interface BoxOptions {
  suite?: Suite;
  /** octavia.conf options over the box's ("section.key": value). */
  set?: Record<string, string | number | boolean>;
  /**
   * The amphorae's agent: 'this' (default) this checkout's, bind-mounted
   * into the CI image; 'reference' Octavia's own, Debian's octavia-agent
   * installed in the CI image's root filesystem (test/octavia-box/reference-rootfs.sh).
   */
  agent?: AgentKind;
  /**
   * The worker's amphora driver: 'octavia' (default) Octavia's own REST
   * driver; 'spec' this project's (octavia-driver/, issue 30), installed on
   * the control plane's Python path with its entry point.
   */
  amphoraDriver?: AmphoraDriver;
}

export type AmphoraDriver = 'octavia' | 'spec';

const BOX_DRIVERS = fileURLToPath(new URL('../../../../test/octavia-box/', import.meta.url));
const SPEC_DRIVER = fileURLToPath(new URL('../../../../octavia-driver/', import.meta.url));

/**
 * A drivers directory for the control plane's PYTHONPATH: the box's own
 * drivers, and the spec driver installed as its wheel installs it (the
 * package and a dist-info naming its entry point, read from pyproject.toml).
 */
function driversWithSpecDriver(dir: string): string {
  mkdirSync(dir, { recursive: true });
  for (const name of ['octavia_box', 'octavia_box-0.1.dist-info']) cpSync(join(BOX_DRIVERS, name), join(dir, name), { recursive: true });
  cpSync(join(SPEC_DRIVER, 'amphora_spec_driver'), join(dir, 'amphora_spec_driver'), { recursive: true });
  const pyproject = readFileSync(join(SPEC_DRIVER, 'pyproject.toml'), 'utf8');
  const version = /^version = "([^"]+)"$/m.exec(pyproject)![1]!;
  const entryPoints = /^\[project\.entry-points\."([^"]+)"\]\n((?:[^[\n].*\n)+)/m.exec(pyproject)!;
  const info = join(dir, `amphora_spec_driver-${version}.dist-info`);
  mkdirSync(info, { recursive: true });
  writeFileSync(join(info, 'METADATA'), `Metadata-Version: 2.1\nName: amphora-spec-driver\nVersion: ${version}\n`);
  // TOML's quoted values, as a wheel's entry_points.txt spells them: bare.
  writeFileSync(join(info, 'entry_points.txt'), `[${entryPoints[1]}]\n${entryPoints[2]!.replace(/= "([^"]*)"$/gm, '= $1')}`);
  return dir;
}

/** The reference amphora's root filesystem tar, made from the CI image's (cached by both hashes). */
export function referenceImageTar(ciTar: string): string {
  const r = spawnSync('bash', [REFERENCE_ROOTFS, ciTar], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 20 * 60_000 });
  if (r.status !== 0) throw new Error(`reference-rootfs.sh failed (${r.status}):\n${r.stderr.slice(-3000)}`);
  return r.stdout.trim().split('\n').pop()!;
}

export class OctaviaBox {
  private constructor(
    readonly image: ImageRoot,
    readonly box: Box,
    readonly cloud: Cloud,
    readonly plane: ControlPlane,
    readonly timings: Record<string, number>,
  ) {}

  static async start(opts: BoxOptions = {}): Promise<OctaviaBox> {
    const timings: Record<string, number> = {};
    let t = Date.now();
    const lap = (name: string) => {
      timings[name] = (Date.now() - t) / 1000;
      t = Date.now();
    };
    const agent = opts.agent ?? 'this';
    const { tar: ciTar } = ciImageTar();
    const tar = agent === 'reference' ? referenceImageTar(ciTar) : ciTar;
    lap('image');
    const image = ImageRoot.extract(tar);
    lap('extract');
    const box = Box.create(randomBytes(3).toString('hex').slice(0, 5));
    let cloud: Cloud | null = null;
    try {
      const socket = join(box.stateDir, 'cloud.sock');
      cloud = await Cloud.listen(socket, box, image, agent);
      const spec = opts.amphoraDriver === 'spec';
      const set = { ...(spec ? { 'controller_worker.amphora_driver': 'amphora_spec_driver' } : {}), ...opts.set };
      const plane = await ControlPlane.start({
        netns: box.netns,
        stateDir: join(box.stateDir, 'control-plane'),
        cloudSocket: socket,
        ...(spec ? { driversDir: driversWithSpecDriver(join(box.stateDir, 'drivers')) } : {}),
        ...(opts.suite ? { suite: opts.suite } : {}),
        set,
      });
      lap('control plane');
      return new OctaviaBox(image, box, cloud, plane, timings);
    } catch (err) {
      await cloud?.close();
      box.destroy();
      image.remove();
      throw err;
    }
  }

  /** A v2 API call; throws unless the status is `expect`. */
  async api<T = Json>(method: string, path: string, body?: unknown, expect?: number): Promise<T> {
    const r = await this.plane.request(method, `/v2${path}`, body);
    const wanted = expect ?? (method === 'POST' ? 201 : method === 'DELETE' ? 204 : method === 'PUT' && path.endsWith('/members') ? 202 : 200);
    if (r.status !== wanted) throw new Error(`${method} /v2${path}: ${r.status} (wanted ${wanted}): ${JSON.stringify(r.body)}`);
    return r.body as T;
  }

  async loadBalancer(id: string): Promise<Json> {
    return (await this.api<{ loadbalancer: Json }>('GET', `/lbaas/loadbalancers/${id}`)).loadbalancer;
  }

  /** The status tree (GET .../status): load balancer, listeners, pools and members with their operating status. */
  async statusTree(id: string): Promise<StatusTree> {
    return (await this.api<{ statuses: { loadbalancer: StatusTree } }>('GET', `/lbaas/loadbalancers/${id}/status`)).statuses.loadbalancer;
  }

  /**
   * Until the load balancer's provisioning status is `status`; an ERROR on
   * the way fails at once with the worker's last words.
   */
  async waitProvisioning(id: string, status: string, timeoutMs = 240_000): Promise<Json> {
    return (await waitFor(
      `load balancer ${id} ${status}`,
      async () => {
        const lb = await this.loadBalancer(id);
        if (lb.provisioning_status === 'ERROR' && status !== 'ERROR') {
          throw new Error(`load balancer ${id} went to ERROR:\n${this.plane.logTail('octavia-worker', 60)}`);
        }
        return lb.provisioning_status === status ? lb : null;
      },
      timeoutMs,
      1000,
    ))!;
  }

  /** Until the load balancer is gone from the API (a delete finished). */
  async waitGone(id: string, timeoutMs = 180_000): Promise<void> {
    await waitFor(
      `load balancer ${id} to be deleted`,
      async () => {
        const r = await this.plane.request('GET', `/v2/lbaas/loadbalancers/${id}`);
        const lb = (r.body as { loadbalancer?: Json }).loadbalancer;
        if (lb?.provisioning_status === 'ERROR')
          throw new Error(`load balancer ${id} went to ERROR while deleting:\n${this.plane.logTail('octavia-worker', 60)}`);
        return r.status === 404 || lb?.provisioning_status === 'DELETED';
      },
      timeoutMs,
      1000,
    );
  }

  /** A statement on Octavia's database (what an operator's script or a test's clock change does). */
  async sql(statement: string): Promise<string> {
    const { socket, name } = this.plane.ready.db;
    const { stdout } = await run('chroot', [this.plane.rootfs, 'mariadb', `--socket=${socket}`, name, '--batch', '-e', statement]);
    return stdout;
  }

  /** The amphorae of a load balancer as the operator API lists them. */
  async amphorae(lbId: string): Promise<Json[]> {
    return (await this.api<{ amphorae: Json[] }>('GET', `/octavia/amphorae?loadbalancer_id=${lbId}`)).amphorae;
  }

  async stop(): Promise<void> {
    await this.plane.stop();
    await this.cloud.close();
    this.box.destroy();
    this.image.remove();
  }
}

export interface StatusTree {
  id: string;
  operating_status: string;
  provisioning_status: string;
  listeners: {
    id: string;
    name: string;
    operating_status: string;
    provisioning_status: string;
    pools: { id: string; name: string; operating_status: string; members: { id: string; name: string; address: string; operating_status: string }[] }[];
  }[];
}
