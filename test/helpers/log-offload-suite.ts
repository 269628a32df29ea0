// Log offloading as Octavia configures it, on a booted amphora
// (test/helpers/amphora-vm.ts): the 10-rsyslog.conf Octavia 19's
// LoggingJinjaTemplater renders into the config drive, with the admin and
// tenant targets on the host (10.0.2.2 from the guest) over one log_protocol
// (one per config drive, so an amphora each: vm/log-offload boots one for TCP
// and one for UDP), and disable_local_log_storage. The tenant receiver
// must get haproxy's flow lines for real requests in Octavia's
// user_log_format, the admin receiver
// the agent's and haproxy's administrative lines, and the amphora keep none
// of them on disk, also where Octavia 19's rendering would defeat that (last
// test).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer, type Server } from 'node:net';
import dgram from 'node:dgram';
import { loud } from './hooks.js';
import { AmphoraVm } from './amphora-vm.js';
import { TestBackend } from './backend.js';
import { LoadGenerator, waitFor } from './load.js';
import { testPorts } from './ports.js';

/** A syslog receiver on the host: every message any sender sends (TCP: one a line; UDP: one a datagram). */
class SyslogReceiver {
  private readonly messages: string[] = [];
  private tcpText = '';
  private tcp: Server | null = null;
  private udp: dgram.Socket | null = null;

  constructor(
    readonly port: number,
    readonly protocol: 'TCP' | 'UDP',
  ) {}

  listen(): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.protocol === 'UDP') {
        this.udp = dgram.createSocket('udp4', (msg) => {
          this.messages.push(msg.toString('utf8'));
        });
        this.udp.once('error', reject);
        this.udp.bind(this.port, '127.0.0.1', () => resolve());
        return;
      }
      this.tcp = createServer((sock) => {
        sock.setEncoding('utf8');
        sock.on('data', (d: string) => {
          this.tcpText += d;
        });
        sock.on('error', () => {});
      });
      this.tcp.once('error', reject);
      this.tcp.listen({ host: '127.0.0.1', port: this.port }, () => resolve());
    });
  }

  lines(): string[] {
    return [...this.messages, ...this.tcpText.split('\n')].filter(Boolean);
  }

  close(): void {
    this.tcp?.close();
    this.udp?.close();
  }
}

/** One log_protocol's amphora, with its receivers and a member. */
class LogOffloadRig {
  readonly amp: AmphoraVm;
  readonly subnet: string;
  readonly admin: SyslogReceiver;
  readonly tenant: SyslogReceiver;
  private readonly memberPort: number;
  member: TestBackend | null = null;

  constructor(readonly protocol: 'TCP' | 'UDP') {
    const ports = testPorts(protocol === 'TCP' ? 'vm-log-offload-tcp' : 'vm-log-offload-udp');
    this.subnet = protocol === 'TCP' ? '16' : '17';
    this.amp = new AmphoraVm(`vm-log-${protocol.toLowerCase()}`, ports, Number(this.subnet));
    this.admin = new SyslogReceiver(ports.one(), protocol);
    this.tenant = new SyslogReceiver(ports.one(), protocol);
    this.memberPort = ports.one();
  }

  /** Booted with Octavia's log offloading in its config drive, a load balancer serving. */
  async start(): Promise<void> {
    await Promise.all([this.admin.listen(), this.tenant.listen()]);
    await this.amp.boot({
      overrides: {
        amphora_agent: {
          admin_log_targets: [`10.0.2.2:${this.admin.port}`],
          tenant_log_targets: [`10.0.2.2:${this.tenant.port}`],
          log_protocol: this.protocol,
          disable_local_log_storage: true,
        },
      },
    });
    await this.amp.plugVip();
    this.member = await new TestBackend('m1', this.amp.vipHost, this.memberPort).start();
    await this.amp.peer!.call('upload_config', this.amp.lbId, await this.amp.render([this.member], true));
    await this.amp.peer!.call('start_listener', this.amp.lbId);
  }

  async stop(): Promise<void> {
    this.amp.cleanup();
    this.admin.close();
    this.tenant.close();
    await this.member?.stop();
  }
}

/**
 * A suite per log_protocol, each on its own amphora. The amphorae boot side
 * by side (one TCG vCPU each, on two cores): the suites wait for one boot's
 * time instead of one each.
 */
export function logOffloadSuites(protocols: ('TCP' | 'UDP')[]): void {
  const rigs = protocols.map((p) => new LogOffloadRig(p));
  let starts: Promise<void>[] | null = null;
  const started = (i: number): Promise<void> => {
    if (!starts) {
      starts = rigs.map((r) => r.start());
      // A suite awaits its own start; a failure is reported there, not as an unhandled rejection.
      for (const s of starts) s.catch(() => {});
    }
    return starts[i]!;
  };
  for (const [i, rig] of rigs.entries()) logOffloadSuite(rig, () => started(i));
}

function logOffloadSuite(rig: LogOffloadRig, started: () => Promise<void>): void {
  const { amp, admin, tenant, protocol, subnet } = rig;
  const ADMIN_PORT = admin.port;
  const TENANT_PORT = tenant.port;
  const test = suite(`log offloading over ${protocol}`);

  test.before(loud(started));
  test.after(() => rig.stop());

  test("the config drive's 10-rsyslog.conf is Octavia's, with both targets over the protocol and local storage off", () => {
    const conf = amp.build.config_drive_files!['/etc/rsyslog.d/10-rsyslog.conf']!;
    assert.match(conf, new RegExp(`target="10\\.0\\.2\\.2"\\s+port="${ADMIN_PORT}"\\s+protocol="${protocol}"`));
    assert.match(conf, new RegExp(`target="10\\.0\\.2\\.2"\\s+port="${TENANT_PORT}"\\s+protocol="${protocol}"`));
    assert.is(Buffer.from(amp.guest.root('base64 -w0 /etc/rsyslog.d/10-rsyslog.conf'), 'base64').toString('utf8'), conf);
  });

  test("the tenant receiver gets haproxy's flow lines for real requests, in Octavia's user_log_format", async () => {
    const load = new LoadGenerator(amp.vipUrl, 5, 1).start();
    try {
      await waitFor('requests through the VIP', () => load.records.filter((r) => r.status === 200).length >= 5, 120_000, 250);
    } finally {
      await load.stop();
    }
    // user_log_format: "{{ project_id }} {{ lb_id }} %f %ci %cp %t %{+Q}r %ST %B ...".
    const flow = await waitFor(
      'flow lines at the tenant receiver',
      () => tenant.lines().filter((l) => l.includes(amp.lbId) && l.includes('"GET / HTTP/1.1"')),
      60_000,
      500,
    );
    assert.ok(flow.length >= 1);
    // Requests before the member's check passes get 503 from haproxy: those lines are flows too.
    const served = new RegExp(`${AmphoraVm.projectId} ${amp.lbId} \\S+ 10\\.214\\.${subnet}\\.1 \\d+ \\S+ "GET / HTTP/1\\.1" 200 `);
    assert.ok(
      flow.some((l) => served.test(l)),
      `no served request among the flow lines:\n${flow.slice(0, 5).join('\n')}`,
    );
    assert.not.ok(
      admin.lines().some((l) => l.includes('"GET / HTTP/1.1"')),
      'flow lines reached the admin receiver',
    );
  });

  test("the admin receiver gets the agent's and haproxy's administrative lines, not the flows", async () => {
    await waitFor("the agent's lines at the admin receiver", () => admin.lines().some((l) => l.includes('amphora-agent')), 60_000, 500);
    await waitFor("haproxy's lines at the admin receiver", () => admin.lines().some((l) => /haproxy/.test(l) && !l.includes('amphora-agent')), 60_000, 500);
    assert.not.ok(
      tenant.lines().some((l) => l.includes('amphora-agent')),
      "the agent's lines reached the tenant receiver",
    );
  });

  // Octavia 19's 10-rsyslog.conf template strips the newline before its
  // closing "*.* stop" when admin targets are set ("local1.* call
  // admin_forwarding*.* stop"): rsyslog never stops, and Debian's rules would
  // keep every line locally (/var/log/haproxy.log, /var/log/syslog). The
  // image puts the stop the file meant in a file of its own at each rsyslog
  // start (/var/lib/octavia/rsyslog-local-storage.sh); the controller's file
  // stays byte for byte as sent (checked above).
  test('disable_local_log_storage: no flow line kept on the amphora, also with Octavia 19\'s glued "*.* stop"', () => {
    const conf = amp.build.config_drive_files!['/etc/rsyslog.d/10-rsyslog.conf']!;
    const glued = /^local1\.\* call admin_forwarding\*\.\* stop$/m.test(conf);
    console.log(`10-rsyslog.conf from the controller: "*.* stop" ${glued ? 'glued to the admin call (Octavia 19 defect)' : 'on its own line'}`);
    const stop = amp.guest.root('cat /etc/rsyslog.d/11-octavia-local-storage-off.conf 2>/dev/null || true');
    if (glued) assert.match(stop, /^\*\.\* stop$/m, 'the stop 10-rsyslog.conf meant is not in place');
    else assert.is(stop.trim(), '', 'a stop file although the controller rendered its own');
    // The flows went out (the tenant receiver test above); none stayed.
    const kept = amp.guest.root(`cat /var/log/haproxy.log /var/log/syslog 2>/dev/null | grep -c '${amp.lbId}.*"GET / HTTP/1.1"' || true`).trim();
    assert.is(Number(kept), 0, `flow lines kept on the amphora: ${kept}`);
  });

  test.run();
}
