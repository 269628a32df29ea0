// ACTIVE_STANDBY with the amphorae under systemd: each amphora is the CI
// image booted by systemd-nspawn (amphora-container.ts) in a management
// namespace of its own (the controller reaches its agent at the namespace
// end of a veth, as at an amphora's lb_network_ip). The agent runs under
// amphora-agent.service with the image's defaults (process_manager auto ->
// systemd, tenant namespace amphora-haproxy made by amphora-netns.service),
// so haproxy and keepalived run as the units the agent writes. The rest is
// AmphoraPair's: the VIP bridge, the client, the members, and Octavia's
// controller flow; the VIP and member ports are hot-plugged into the
// container's namespace after it booted, as Nova plugs them.
import { readFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { AmphoraPair, type AmphoraBase } from './active-standby.js';
import { AmphoraContainer, type ImageRoot } from './amphora-container.js';
import { issue, makeCa } from './certs.js';
import { testDir, type OctaviaUnderTest } from './haproxies.js';
import { waitFor } from './load.js';
import { createTestNetwork, type TestNetwork } from './netns.js';
import { OctaviaPeer } from './octavia-peer.js';

/** The image's paths (its amphora-agent.conf as Octavia's config drive writes it). */
export const BASE_PATH = '/var/lib/octavia';
const CERT_DIR = '/var/lib/octavia/certs';
/** amphora-netns.service's namespace, the agent's default network_namespace. */
export const TENANT_NETNS = 'amphora-haproxy';

export interface ContainerAmphora extends AmphoraBase {
  container: AmphoraContainer;
  /** Its management network: the container's own namespace, the controller's side on the host. */
  management: TestNetwork;
}

/** amphora-agent.conf as Octavia's AgentJinjaTemplater writes it for ACTIVE_STANDBY, without heartbeat destinations. */
function agentConfig(amphoraId: string, port: number): string {
  return [
    '[DEFAULT]',
    'debug = False',
    '',
    '[haproxy_amphora]',
    `base_cert_dir = ${CERT_DIR}`,
    `base_path = ${BASE_PATH}`,
    'bind_host = ::',
    `bind_port = ${port}`,
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
    `amphora_id = ${amphoraId}`,
    'amphora_udp_driver = keepalived_lvs',
    '',
    '[controller_worker]',
    'loadbalancer_topology = ACTIVE_STANDBY',
    '',
  ].join('\n');
}

/** Resolves once something accepts TCP connections at host:port. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ host, port, timeout: 1000 });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
    s.once('timeout', () => {
      s.destroy();
      resolve(false);
    });
  });
}

export class SystemdActiveStandbyRig extends AmphoraPair<ContainerAmphora> {
  private managements: TestNetwork[] = [];
  private containers: AmphoraContainer[] = [];

  private constructor(
    private readonly image: ImageRoot,
    readonly release: OctaviaUnderTest,
    readonly port: number,
  ) {
    super(`image under systemd, ${release.label}`, 'aat-sd', 'sd');
  }

  static async create(image: ImageRoot, release: OctaviaUnderTest, port: number): Promise<SystemdActiveStandbyRig> {
    const rig = new SystemdActiveStandbyRig(image, release, port);
    return AmphoraPair.built(rig, () => rig.build());
  }

  protected amphoraNamespaces(): string[] {
    return this.managements.map((m) => m.netns);
  }

  private async build(): Promise<void> {
    await this.buildNetworks();
    // Both containers boot at once (most of the time is systemd's start-up).
    const booted = await Promise.all((['A', 'B'] as const).map((name, i) => this.boot(name, i)));
    for (const [i, { container, management, pki }] of booted.entries()) {
      const name = (['A', 'B'] as const)[i]!;
      const amphoraId = this.amphoraId(i);
      const target = { amphoraId, client: pki.client, serverCa: pki.serverCa, port: this.port, basePath: BASE_PATH, certDir: CERT_DIR };
      await waitFor(`amphora ${name}'s agent to listen`, () => accepts(management.nsIp, this.port).then((ok) => ok || null), 60_000, 250).catch(
        (err: Error) => {
          throw new Error(`${err.message}\n${container.exec(['journalctl', '--no-pager', '-u', 'amphora-agent', '-n', '40'])}`);
        },
      );
      const peer = await OctaviaPeer.connect(this.release, target, management.nsIp);
      // Nova hot-plugs the VIP and member ports into the running amphora.
      const ports = this.hotPlug(i, management.netns);
      const amp: ContainerAmphora = {
        name,
        amphoraId,
        apiHost: management.nsIp,
        ...this.addresses(i),
        vipBridgePort: ports.vipBridgePort,
        peer,
        ip: [...container.inNetns(TENANT_NETNS), 'ip'],
        container,
        management,
      };
      this.amphorae.push(amp);
      await this.plug(amp, ports);
    }
  }

  private amphoraId(i: number): string {
    return `a0a0a0a${i}-0000-4000-8000-5d5d${this.id}000${i}`;
  }

  /** One amphora: its management network, certificates, config, and the image booted with them. */
  private async boot(name: 'A' | 'B', i: number) {
    const management = createTestNetwork();
    this.managements.push(management);
    // Where the controller's Python (in its release's chroot) sees it too.
    const pki = await testDir(`active-standby-systemd-pki-${name.toLowerCase()}`);
    const serverCa = makeCa(pki, 'server-ca');
    const clientCa = makeCa(pki, 'client-ca');
    const server = issue(serverCa, 'amphora', { dnsName: this.amphoraId(i), usage: 'serverAuth' });
    const client = issue(clientCa, 'controller', { usage: 'clientAuth' });
    const container = await AmphoraContainer.boot(this.image, {
      name: `${name.toLowerCase()}-${this.id}`,
      netns: management.netns,
      files: {
        '/etc/octavia/amphora-agent.conf': { content: agentConfig(this.amphoraId(i), this.port), mode: 0o600 },
        '/etc/octavia/certs/server.pem': { content: readFileSync(server.pem), mode: 0o600 },
        '/etc/octavia/certs/client_ca.pem': { content: readFileSync(clientCa.cert), mode: 0o644 },
      },
    });
    this.containers.push(container);
    return { container, management, pki: { serverCa, client } };
  }

  /** The host's view of a load balancer's haproxy unit: systemd's main pid (in the container's pid namespace) and state. */
  haproxyUnit(amp: ContainerAmphora, lbId: string): { mainPid: number; state: string; restarts: number } {
    const unit = `haproxy-${lbId}.service`;
    const p = amp.container.exec(['systemctl', 'show', '-p', 'MainPID,ActiveState,SubState,NRestarts', unit]);
    const v = Object.fromEntries(
      p
        .trim()
        .split('\n')
        .map((l) => l.split('=') as [string, string]),
    );
    return { mainPid: Number(v.MainPID), state: `${v.ActiveState}/${v.SubState}`, restarts: Number(v.NRestarts) };
  }

  protected async stopAmphorae(): Promise<void> {
    await Promise.all(this.containers.map((c) => c.destroy()));
    for (const m of this.managements) m.destroy();
  }
}
