// One amphora VM as Octavia's controller gets it (test/helpers/vm.ts): the
// config drive Octavia 19's own compute task asks Nova for, booted, with
// Octavia's heartbeat receiver on the host and its AmphoraAPIClient1_0 on the
// forwarded management port; and the VIP port a tap on the host, hot-plugged
// over QMP as Nova hot-plugs it at plug time. Used by the test files of
// test/vm, each of which boots its own (the runner runs vm/reboot beside
// vm/boot and vm/log-offload; a TCG boot beside two more VMs takes up to 6
// minutes).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { OCTAVIAS, testDir } from './haproxies.js';
import { issue, makeCa, type Ca, type Issued } from './certs.js';
import { octaviaComputeCreate, writeNovaConfigDrive, type ComputeBuild } from './config-drive.js';
import { HeartbeatReceiver } from './heartbeat-receiver.js';
import { OctaviaPeer } from './octavia-peer.js';
import type { PortBlock } from './ports.js';
import { sleep, waitFor } from './load.js';
import type { TestBackend } from './backend.js';
import { GuestShell, kvmBoots, shellQuote, Vm, vmImage, type Bootable } from './vm.js';

export const OCTAVIA_19 = OCTAVIAS.find((o) => o.label === 'octavia-19')!;
export const seconds = (since: number) => ((Date.now() - since) / 1000).toFixed(1);

export interface BootOptions {
  /** More oslo.config groups for the compute task (e.g. amphora_agent's log offloading). */
  overrides?: Record<string, Record<string, unknown>>;
  image?: Bootable;
  /** The flavor's disk (the image grows to it). */
  diskGb?: number;
  /** The flavor's RAM (1,024 MB, Octavia's default amphora flavor, unless asked). */
  memoryMb?: number;
  /** Deadline for ssh, for a running system and for the agent's first answer, each (a small memory size may never get there). */
  deadlineMs?: number;
  /**
   * The controller's [haproxy_amphora] rest_request_read_timeout (s; Octavia's
   * default 60). Under TCG a call that takes a real amphora a second can take
   * minutes: past this the driver gives up on the call and sends it again.
   */
  restReadTimeout?: number;
}

/** The guest's memory from /proc/meminfo, in MiB: used is MemTotal less MemAvailable; shmem is tmpfs and shared mappings. */
export interface GuestMemory {
  totalMb: number;
  usedMb: number;
  shmemMb: number;
}

export class AmphoraVm {
  readonly amphoraId: string;
  readonly lbId: string;
  readonly listenerId: string;
  readonly poolId: string;
  readonly apiPort: number;
  readonly sshPort: number;
  readonly heartbeatPort: number;
  readonly heartbeatKey: string;
  readonly mgmtMac: string;
  /** The VIP network: the tap's address on the host is the gateway and the members' address. */
  readonly vipTap: string;
  readonly vipMac: string;
  readonly vipHost: string;
  readonly vip: string;
  readonly vipNetInfo: Record<string, unknown>;
  readonly listenerPort = 8080;
  /** The load balancer's project (the first field of Octavia's user_log_format). */
  static readonly projectId = '0f14c0de00000000000000000000aaaa';
  vm: Vm | null = null;
  guest!: GuestShell;
  build!: ComputeBuild;
  heartbeats: HeartbeatReceiver | null = null;
  peer: OctaviaPeer | null = null;
  haproxyVersion = '';
  /** Seconds from power-on to the first answer on the agent's API (GET / with the controller's certificate). */
  firstAnswer: number | null = null;
  private watching = false;
  private dir = '';
  private restReadTimeout = 60;
  private serverCa!: Ca;
  private controller!: Issued;

  /** `tag`: two hex digits that keep this file's ids, MACs, tap and VIP subnet apart from another's. */
  constructor(
    readonly name: string,
    ports: PortBlock,
    readonly tag: number,
  ) {
    const t = tag.toString(16).padStart(2, '0');
    this.amphoraId = `b7c1e2d3-0000-4000-8000-0000000${t}a14`;
    this.lbId = `c0ffee00-0000-4000-8000-0000000${t}b14`;
    this.listenerId = `c0ffee00-0000-4000-8000-0000000${t}c14`;
    this.poolId = `c0ffee00-0000-4000-8000-0000000${t}d14`;
    this.apiPort = ports.one();
    this.sshPort = ports.one();
    this.heartbeatPort = ports.one();
    this.heartbeatKey = `${name}-heartbeat-key`;
    this.mgmtMac = `52:54:00:14:${t}:01`;
    this.vipTap = `vm14vip${t}`;
    this.vipMac = `52:54:00:14:${t}:02`;
    this.vipHost = `10.214.${tag}.1`;
    this.vip = `10.214.${tag}.10`;
    this.vipNetInfo = {
      subnet_cidr: `10.214.${tag}.0/24`,
      gateway: this.vipHost,
      mac_address: this.vipMac,
      vrrp_ip: `10.214.${tag}.5`,
      mtu: 1500,
      host_routes: [],
      additional_vips: [],
    };
    process.on('exit', () => this.cleanup());
  }

  get vipUrl(): string {
    return `http://${this.vip}:${this.listenerPort}/`;
  }

  /**
   * Build (or reuse) the image, make the config drive, power on, and wait for
   * a running system, the agent's first answer and the client.
   */
  async boot(options: BootOptions = {}): Promise<void> {
    const image = options.image ?? vmImage();
    const deadline = options.deadlineMs ?? 8 * 60_000;
    // Named: VMs booting side by side print into one log.
    const log = (line: string) => console.log(`[${this.name}] ${line}`);
    log(image.summary);
    const dir = await testDir(this.name);
    this.dir = dir;
    let started = Date.now();
    // A disk that boots itself has no kernel file to probe with: the vm-test image's is the same Debian kernel.
    const kvm = await kvmBoots(image.kernel ?? vmImage().kernel);
    log(`accelerator: ${kvm ? 'kvm' : 'tcg (KVM absent or does not boot this kernel)'} (probe ${seconds(started)} s)`);

    // The controller's PKI, and what its compute task hands Nova.
    const pki = join(dir, 'pki');
    mkdirSync(pki);
    this.serverCa = makeCa(pki, 'server-ca');
    const clientCa = makeCa(pki, 'client-ca');
    const server = issue(this.serverCa, 'amphora', { dnsName: this.amphoraId, usage: 'serverAuth' });
    this.controller = issue(clientCa, 'controller', { usage: 'clientAuth' });
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'octavia-ssh', '-f', join(dir, 'octavia-ssh')]);
    this.build = await octaviaComputeCreate(OCTAVIA_19, {
      amphoraId: this.amphoraId,
      serverPem: readFileSync(server.pem, 'utf8'),
      clientCa: readFileSync(clientCa.cert, 'utf8'),
      overrides: {
        controller_worker: {
          amp_boot_network_list: ['mgmt-net'],
          amp_ssh_key_name: 'octavia-ssh',
          loadbalancer_topology: 'SINGLE',
          user_data_config_drive: false,
        },
        // qemu's user network: the host is 10.0.2.2 from the guest.
        health_manager: { controller_ip_port_list: [`10.0.2.2:${this.heartbeatPort}`], heartbeat_key: this.heartbeatKey, heartbeat_interval: 3 },
        ...options.overrides,
      },
    });
    const drive = join(dir, 'config-drive');
    writeNovaConfigDrive(drive, this.build, {
      uuid: this.amphoraId.replace(/^b7c1e2d3/, '5e1f0000'),
      mac: this.mgmtMac,
      networkId: 'mgmt-net',
      publicKey: readFileSync(join(dir, 'octavia-ssh.pub'), 'utf8').trim(),
    });
    const iso = join(dir, 'config-drive.iso');
    execFileSync('genisoimage', ['-quiet', '-o', iso, '-V', 'config-2', '-J', '-r', drive]);
    rmSync(drive, { recursive: true });

    this.heartbeats = new HeartbeatReceiver(this.heartbeatPort, this.heartbeatKey, OCTAVIA_19);
    await this.heartbeats.waitReady();

    started = Date.now();
    this.vm = new Vm({
      dir,
      image,
      diskGb: options.diskGb,
      memoryMb: options.memoryMb,
      configDrive: iso,
      mac: this.mgmtMac,
      apiPort: this.apiPort,
      sshPort: this.sshPort,
      kvm,
    });
    await this.vm.start();
    const answered = this.watchFirstAnswer();
    try {
      const kernel = await this.vm.waitConsole('the kernel to start init', /Run \/init as init process|systemd\[1\]|Welcome to/, 5 * 60_000);
      this.guest = new GuestShell(this.sshPort, join(dir, 'octavia-ssh'));
      await waitFor(
        'ssh into the guest with the key from the config drive',
        () => {
          if (this.vm!.exited) throw new Error(`qemu exited before ssh answered:\n${this.vm!.consoleText().slice(-3000)}`);
          return this.guest.run('true', 30_000).status === 0;
        },
        deadline,
        2000,
      );
      const sshAt = seconds(started);
      const state = this.guest.run('systemctl is-system-running --wait', deadline).stdout.trim();
      log(`boot: kernel at ${kernel.toFixed(1)} s, ssh at ${sshAt} s, system ${state} at ${seconds(started)} s`);
      await waitFor("the agent's first answer", () => this.firstAnswer !== null, deadline, 500);
    } finally {
      this.watching = false;
      await answered;
    }
    log(this.guest.run('systemd-analyze; systemd-analyze blame --no-pager | head -8').stdout.trim().replaceAll('\n', `\n[${this.name}] `));

    this.peer = new OctaviaPeer(OCTAVIA_19);
    this.restReadTimeout = options.restReadTimeout ?? 60;
    await this.setupPeer(120, 2);
    const haproxy = /version (\S+)/.exec(this.guest.run('/usr/sbin/haproxy -v').stdout)?.[1] ?? '';
    this.haproxyVersion = haproxy.split('.').slice(0, 2).join('.');
  }

  /** From power-on, GET / on the agent's API every half second, as a controller would, until it answers 200. */
  private async watchFirstAnswer(): Promise<void> {
    this.watching = true;
    const [key, cert, ca] = [this.controller.key, this.controller.cert, this.serverCa.cert].map((f) => readFileSync(f));
    while (this.watching && this.firstAnswer === null) {
      const status = await new Promise<number>((resolve) => {
        const req = request(
          {
            host: '127.0.0.1',
            port: this.apiPort,
            path: '/',
            key,
            cert,
            ca,
            timeout: 5000,
            agent: false,
            // The amphora's certificate names its id, not 127.0.0.1.
            checkServerIdentity: () => undefined,
          },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('timeout', () => req.destroy());
        req.on('error', () => resolve(0));
        req.end();
      });
      if (status === 200) this.firstAnswer = (Date.now() - this.vm!.startedAt) / 1000;
      else await sleep(500);
    }
  }

  /** Seconds from power-on to the first heartbeat Octavia's receiver accepted, or null. */
  get firstHeartbeat(): number | null {
    const first = this.heartbeats?.received.find((r) => r.ok);
    return first && this.vm ? (first.at - this.vm.startedAt) / 1000 : null;
  }

  /** MemTotal, MemTotal less MemAvailable, and Shmem, from the guest's /proc/meminfo; never blocks the event loop (members and clients served from it keep going). */
  async memory(): Promise<GuestMemory> {
    return AmphoraVm.memoryOf(await this.guest.output('cat /proc/meminfo', 30_000));
  }

  /**
   * The guest's own account of a run that went wrong, saved beside the test's
   * files: the agent's journal and haproxy's administrative log (servers going
   * DOWN and UP, reloads, "no server available"). Returns the file's path.
   */
  async saveLogs(): Promise<string> {
    const file = join(this.dir, 'guest-logs.txt');
    const logs = await this.guest.output(
      `sudo -n sh -c ${shellQuote("journalctl -b -o short-precise --no-pager -u amphora-agent -u 'haproxy*' -u 'amphora-*'; echo ==== syslog; grep -h haproxy /var/log/syslog || true")}`,
      120_000,
    );
    writeFileSync(file, logs);
    return file;
  }

  private static memoryOf(info: string): GuestMemory {
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(info)?.[1] ?? Number.NaN);
    return { totalMb: kb('MemTotal') / 1024, usedMb: (kb('MemTotal') - kb('MemAvailable')) / 1024, shmemMb: kb('Shmem') / 1024 };
  }

  /**
   * Where the guest's memory goes: PSS summed by process name (MiB, largest
   * first), and the kernel's own shares from /proc/meminfo (tmpfs, where a
   * volatile journal lives, is Shmem).
   */
  memoryBreakdown(): { processes: [string, number][]; kernel: Record<string, number> } {
    const pss = this.guest.root(
      'for p in /proc/[0-9]*; do n=$(cat $p/comm 2>/dev/null) && k=$(awk \'/^Pss:/ {print $2}\' $p/smaps_rollup 2>/dev/null) && [ -n "$k" ] && echo "$k $n"; done; true',
    );
    const byName = new Map<string, number>();
    for (const line of pss.trim().split('\n')) {
      const [kb, ...name] = line.split(' ');
      byName.set(name.join(' '), (byName.get(name.join(' ')) ?? 0) + Number(kb) / 1024);
    }
    const info = this.guest.run('cat /proc/meminfo').stdout;
    const kernel = Object.fromEntries(
      ['Shmem', 'Slab', 'KernelStack', 'PageTables', 'AnonPages', 'Cached', 'Buffers'].map((f) => [
        f,
        Number(new RegExp(`^${f}:\\s+(\\d+) kB$`, 'm').exec(info)?.[1] ?? 0) / 1024,
      ]),
    );
    return { processes: [...byName].sort((a, b) => b[1] - a[1]), kernel };
  }

  /** Processes the guest's kernel killed for want of memory since boot (/proc/vmstat's oom_kill). */
  oomKills(): number {
    return Number(/^oom_kill (\d+)$/m.exec(this.guest.run('cat /proc/vmstat').stdout)?.[1] ?? Number.NaN);
  }

  /** Octavia's client set up as a worker's, with its retries (404 while a port is not there yet). */
  async setupPeer(retries: number, interval: number): Promise<void> {
    const setup = await this.peer!.request('setup', {
      amphora_id: this.amphoraId,
      lb_network_ip: '127.0.0.1',
      overrides: {
        haproxy_amphora: {
          client_cert: this.controller.pem,
          server_ca: this.serverCa.cert,
          bind_port: this.apiPort,
          connection_max_retries: retries,
          connection_retry_interval: interval,
          rest_request_read_timeout: this.restReadTimeout,
        },
        // Where the driver's certificate manager keeps tenant certificates (TERMINATED_HTTPS listeners).
        certificates: { cert_manager: 'local_cert_manager', storage_path: this.certStore() },
      },
    });
    if (!setup.ok) throw new Error(`Octavia client setup: ${setup.message}\n${setup.trace ?? ''}`);
  }

  private certStore(): string {
    const store = join(this.dir, 'cert-store');
    mkdirSync(store, { recursive: true });
    return store;
  }

  /** The VIP port: a tap on the host with the gateway address, hot-plugged into the VM. */
  async hotplugVip(): Promise<void> {
    spawnSync('ip', ['link', 'del', this.vipTap], { stdio: 'ignore' });
    execFileSync('ip', ['tuntap', 'add', 'dev', this.vipTap, 'mode', 'tap']);
    execFileSync('ip', ['addr', 'add', `${this.vipHost}/24`, 'dev', this.vipTap]);
    execFileSync('ip', ['link', 'set', this.vipTap, 'up']);
    await this.vm!.qmp.execute('netdev_add', { type: 'tap', id: 'vip', ifname: this.vipTap, script: 'no', downscript: 'no' });
    await this.vm!.qmp.execute('device_add', { driver: 'virtio-net-pci', id: 'vip-port', netdev: 'vip', mac: this.vipMac, romfile: '' });
  }

  /** The VIP port hot-plugged, then plugged by Octavia's client (which retries on the agent's 404 until the NIC is there). */
  async plugVip(): Promise<void> {
    await this.hotplugVip();
    await this.peer!.call('plug_vip', this.vip, this.vipNetInfo);
  }

  /** haproxy.cfg from Octavia 19's JinjaTemplater: one HTTP listener on the VIP, members on the host, HTTP checks. */
  render(list: TestBackend[], connectionLogging = false): Promise<string> {
    return this.peer!.renderConfig({
      connection_logging: connectionLogging,
      project_id: AmphoraVm.projectId,
      lb_id: this.lbId,
      listener_id: this.listenerId,
      pool_id: this.poolId,
      vip: this.vip,
      port: this.listenerPort,
      haproxy_version: this.haproxyVersion,
      monitor: { delay: 1, timeout: 2, fall: 2, rise: 2, path: '/healthz' },
      members: list.map((m) => ({ id: m.name, address: m.host, port: m.port })),
    });
  }

  /** The load balancer's unit as systemd sees it in the guest. */
  haproxyUnit(): { active: string; enabled: string; pid: number } {
    const unit = `haproxy-${this.lbId}.service`;
    const show = this.guest.run(`systemctl show -p ActiveState -p MainPID ${unit}`).stdout;
    return {
      active: /ActiveState=(\S+)/.exec(show)?.[1] ?? '',
      enabled: this.guest.run(`systemctl is-enabled ${unit}`).stdout.trim(),
      pid: Number(/MainPID=(\d+)/.exec(show)?.[1] ?? 0),
    };
  }

  cleanup(): void {
    this.peer?.close();
    this.peer = null;
    this.heartbeats?.stop();
    this.heartbeats = null;
    this.vm?.stop();
    spawnSync('ip', ['link', 'del', this.vipTap], { stdio: 'ignore' });
  }
}
