// plug vip, plug network and interface lookup for real, driven by the client
// of each Octavia release (11, 16, 19): a veth end stands for the hot-plugged Neutron port, the agent
// moves it into the amphora namespace and configures it; `ip -n` shows it.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { loud } from '../helpers/hooks.js';
import { execFileSync } from 'node:child_process';
import https from 'node:https';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { HAPROXIES, OCTAVIAS, testDir } from '../helpers/haproxies.js';
import { createTestNetwork, type TestNetwork } from '../helpers/netns.js';
import { startAgent, type AgentUnderTest } from '../helpers/agent-process.js';
import { testPorts } from '../helpers/ports.js';
import { OctaviaPeer } from '../helpers/octavia-peer.js';
import { waitFor } from '../helpers/load.js';
import { octaviaStyleConfig } from '../helpers/octavia-config.js';
import { fileURLToPath } from 'node:url';

const AGENT = testPorts('octavia-network').range(OCTAVIAS.length);

const MAIN = fileURLToPath(new URL('../../agent/main.js', import.meta.url));

// The same plugging, driven by the client of each Octavia release in turn.
OCTAVIAS.forEach((release, ri) => {
  const test = suite(`plug and interfaces through Octavia's client (${release.label})`);

  let amp: TestNetwork;
  let tenant: TestNetwork;
  let agent: AgentUnderTest;
  let peer: OctaviaPeer;
  let dir: string;
  const VIP_MAC = '02:00:00:aa:bb:01';
  const MEMBER_MAC = '02:00:00:aa:bb:02';
  const SRIOV_MAC = '02:00:00:aa:bb:03';

  const sh = (...args: string[]) => execFileSync(args[0]!, args.slice(1), { encoding: 'utf8' });
  const ipn = (...args: string[]) => sh('ip', '-n', amp.netns, ...args);

  /** A "hot-plugged port": a veth whose one end (with the port's MAC) is in the default namespace. */
  function hotplug(name: string, mac: string, peerAddress: string): void {
    sh('ip', 'link', 'add', name, 'address', mac, 'type', 'veth', 'peer', 'name', `${name}p`);
    sh('ip', 'link', 'set', `${name}p`, 'netns', tenant.netns);
    sh('ip', '-n', tenant.netns, 'addr', 'add', peerAddress, 'dev', `${name}p`);
    sh('ip', '-n', tenant.netns, 'link', 'set', `${name}p`, 'up');
  }

  /** PUT /1.0/interface/<vrrp ip>/rules as Octavia 14's controller sends it (its 11 client has no call for it). */
  function putVipRules(body: unknown): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      const req = https.request(
        {
          host: '127.0.0.1',
          port: agent.port,
          method: 'PUT',
          path: '/1.0/interface/10.77.0.5/rules',
          ca: readFileSync(agent.serverCa.cert),
          servername: agent.amphoraId,
          cert: readFileSync(agent.client.cert),
          key: readFileSync(agent.client.key),
          headers: { 'content-type': 'application/json' },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode!));
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify(body));
    });
  }

  test.before(
    loud(async () => {
      amp = createTestNetwork();
      tenant = createTestNetwork();
      dir = await testDir('network');
      agent = await startAgent(HAPROXIES[0]!, dir, amp.netns, AGENT(ri));
      peer = await OctaviaPeer.connect(release, agent);
      hotplug('aatvip0', VIP_MAC, '10.77.0.1/24');
      hotplug('aatmem0', MEMBER_MAC, '10.88.0.1/24');
    }),
  );

  test.after(async () => {
    peer?.close();
    await agent?.stop();
    for (const l of ['aatvip0', 'aatmem0', 'aatsr0', 'aatboot1', 'aatboot2']) {
      try {
        execFileSync('ip', ['link', 'del', l], { stdio: 'ignore' });
      } catch {
        // moved into the amphora namespace: gone with it
      }
    }
    amp?.destroy();
    tenant?.destroy();
  });

  test('plug vip: the port becomes eth1 in the namespace with VRRP address, VIP, routes and the VIP rule', async () => {
    await peer.call('plug_vip', '10.77.0.10', {
      subnet_cidr: '10.77.0.0/24',
      gateway: '10.77.0.1',
      mac_address: VIP_MAC,
      vrrp_ip: '10.77.0.5',
      mtu: 1450,
      host_routes: [{ destination: '192.0.2.0/24', nexthop: '10.77.0.254' }],
      additional_vips: [],
    });
    const addr = ipn('addr', 'show', 'dev', 'eth1');
    assert.match(addr, /mtu 1450/);
    assert.match(addr, /inet 10\.77\.0\.5\/24/);
    assert.match(addr, /inet 10\.77\.0\.10\/32/);
    assert.match(addr, new RegExp(`link/ether ${VIP_MAC}`));
    assert.match(ipn('route', 'show', 'table', '1'), /default via 10\.77\.0\.1 dev eth1/);
    assert.match(ipn('route', 'show'), /192\.0\.2\.0\/24 via 10\.77\.0\.254 dev eth1/);
    assert.match(ipn('rule', 'show'), /from 10\.77\.0\.10 lookup 1/);
    const file = JSON.parse(readFileSync(join(dir, 'interfaces', 'eth1.json'), 'utf8')) as { if_type: string };
    assert.is(file.if_type, 'vip');
    assert.match(readFileSync(join(agent.basePath, 'plugged_interfaces'), 'utf8'), new RegExp(`^${VIP_MAC} eth1$`, 'm'));
    sh('ip', 'netns', 'exec', amp.netns, 'ping', '-c', '1', '-W', '2', '10.77.0.1');
    // Host routes on the link, as Octavia writes them; UDP/SCTP masquerade and TCP without conntrack on eth1.
    assert.match(ipn('route', 'show', 'table', '1'), /192\.0\.2\.0\/24 via 10\.77\.0\.254 dev eth1 .*onlink/);
    const nft = sh('ip', 'netns', 'exec', amp.netns, 'nft', 'list', 'table', 'ip', 'amphora-lvs-eth1');
    assert.match(nft, /oifname "eth1" meta l4proto \{ udp, sctp \} masquerade/);
    assert.match(nft, /iifname "eth1" meta l4proto tcp notrack/);
    // lo.json, written at agent start as Octavia's agent does.
    assert.equal(JSON.parse(readFileSync(join(dir, 'interfaces', 'lo.json'), 'utf8')).addresses, [{ address: '127.0.0.1', prefixlen: 8 }]);
  });

  test('plug vip again: 409, which the controller turns into Conflict; an unknown MAC: 404 that the controller retries', async () => {
    const again = await peer.callExpectingError('plug_vip', '10.77.0.10', {
      subnet_cidr: '10.77.0.0/24',
      gateway: '10.77.0.1',
      mac_address: VIP_MAC,
      vrrp_ip: '10.77.0.5',
    });
    assert.is(again, 'Conflict');
    const missing = await peer.callExpectingError('plug_vip', '10.77.0.11', {
      subnet_cidr: '10.77.0.0/24',
      gateway: null,
      mac_address: '02:00:00:ff:ff:ff',
    });
    assert.is(missing, 'TimeOutException');
  });

  test('interface lookup by address', async () => {
    assert.equal(await peer.call('get_interface', '10.77.0.10'), { message: 'OK', interface: 'eth1' });
    assert.is(await peer.callExpectingError('get_interface', '10.99.9.9'), 'NotFound');
  });

  test('SINGLE topology: after haproxy starts on the VIP, the VIP is announced by gratuitous ARP', async () => {
    const lb = 'c0c0c0c0-0000-4000-8000-000000000001';
    // The tenant side accepts gratuitous ARP into its neighbour table, so the announcement becomes visible.
    sh('ip', 'netns', 'exec', tenant.netns, 'sysctl', '-q', '-w', 'net.ipv4.conf.all.arp_accept=1');
    sh('ip', 'netns', 'exec', tenant.netns, 'sysctl', '-q', '-w', 'net.ipv4.conf.aatvip0p.arp_accept=1');
    sh('ip', '-n', tenant.netns, 'neigh', 'flush', 'dev', 'aatvip0p');
    const config = octaviaStyleConfig({
      lbId: lb,
      baseDir: agent.basePath,
      bind: '10.77.0.10:80',
      members: [{ id: 'm1', address: '10.88.0.1:80' }],
      monitor: null,
    });
    await peer.call('upload_config', lb, config);
    await peer.call('reload_listener', lb);
    await waitFor(
      'the VIP in the tenant neighbour table',
      () => new RegExp(`10\\.77\\.0\\.10 .*lladdr ${VIP_MAC}`).test(sh('ip', '-n', tenant.netns, 'neigh', 'show')),
      5000,
      100,
    );
    await peer.call('delete_listener', lb);
  });

  test('plug network: a member port becomes eth2 with its fixed IP; plugging it again updates it', async () => {
    const port = { mac_address: MEMBER_MAC, fixed_ips: [{ ip_address: '10.88.0.5', subnet_cidr: '10.88.0.0/24', host_routes: [] }], mtu: 1500 };
    await peer.call('plug_network', port);
    assert.match(ipn('addr', 'show', 'dev', 'eth2'), /inet 10\.88\.0\.5\/24/);
    sh('ip', 'netns', 'exec', amp.netns, 'ping', '-c', '1', '-W', '2', '10.88.0.1');
    await peer.call('plug_network', { ...port, fixed_ips: [{ ip_address: '10.88.0.6', subnet_cidr: '10.88.0.0/24', host_routes: [] }] });
    const addr = ipn('addr', 'show', 'dev', 'eth2');
    assert.match(addr, /inet 10\.88\.0\.6\/24/);
    assert.not.match(addr, /10\.88\.0\.5/, 'the old fixed IP was not removed');
    assert.ok(existsSync(join(dir, 'interfaces', 'eth2.json')));
  });

  test('plug network on the VIP port with vip_net_info (a second subnet on the VRRP port): updated in place, VIP config kept, one VIP rule', async () => {
    await peer.call('plug_network', {
      mac_address: VIP_MAC,
      mtu: 1450,
      fixed_ips: [{ ip_address: '10.55.0.5', subnet_cidr: '10.55.0.0/24', host_routes: [] }],
      vip_net_info: {
        vip: '10.77.0.10',
        subnet_cidr: '10.77.0.0/24',
        gateway: '10.77.0.1',
        vrrp_ip: '10.77.0.5',
        mac_address: VIP_MAC,
        host_routes: [{ destination: '192.0.2.0/24', nexthop: '10.77.0.254' }],
        additional_vips: [],
      },
    });
    const addr = ipn('addr', 'show', 'dev', 'eth1');
    assert.match(addr, /inet 10\.55\.0\.5\/24/);
    assert.match(addr, /inet 10\.77\.0\.5\/24/);
    assert.match(addr, /inet 10\.77\.0\.10\/32/);
    assert.is(ipn('rule', 'show').match(/from 10\.77\.0\.10 lookup 1/g)?.length, 1);
  });

  test('interface rules (SR-IOV VIP firewall): the first call installs the base ruleset, the next one the VIP chain', async () => {
    const put = putVipRules;
    const rules = [
      { protocol: 'TCP', cidr: null, port: 80 },
      { protocol: 'vrrp', cidr: '10.77.0.6/32', port: 112 },
    ];
    assert.is(await put(rules), 200);
    const nft = () => sh('ip', 'netns', 'exec', amp.netns, 'nft', 'list', 'table', 'inet', 'amphora_table');
    assert.match(nft(), /policy drop/);
    assert.not.match(nft(), /amphora_vip_chain/, 'the first call only installs the base ruleset');
    assert.is(await put(rules), 200);
    assert.match(nft(), /tcp dport 80 accept/);
    assert.match(nft(), /ip saddr 10\.77\.0\.6 ip protocol vrrp accept|ip saddr 10\.77\.0\.6 ip protocol 112 accept/);
    assert.is(await put([{ protocol: 'ICMP', cidr: null, port: 1 }]), 400);
    assert.is(await put([{ protocol: 'TCP', cidr: 'not-a-cidr', port: 80 }]), 400);
    sh('ip', 'netns', 'exec', amp.netns, 'nft', 'flush', 'ruleset');
  });

  test('VRRP: upload and start through the controller; keepalived takes the VIP on eth1; stop releases it', async () => {
    const config = [
      'vrrp_instance test_vrrp {',
      '    state BACKUP',
      '    interface eth1',
      '    virtual_router_id 77',
      '    priority 100',
      '    nopreempt',
      '    accept',
      '    garp_master_refresh 5',
      '    advert_int 1',
      '    authentication {',
      '        auth_type PASS',
      '        auth_pass 0123456',
      '    }',
      '    unicast_src_ip 10.77.0.5',
      '    unicast_peer {',
      '        10.77.0.6',
      '    }',
      '    virtual_ipaddress {',
      '        10.77.0.20',
      '    }',
      '}',
      '',
    ].join('\n');
    await peer.call('upload_vrrp_config', config);
    assert.is(readFileSync(join(agent.basePath, 'vrrp', 'octavia-keepalived.conf'), 'utf8'), config);
    // keepalived runs it with the agent's track file beside it (haproxy stopped for good moves the VIP at once).
    assert.match(readFileSync(join(agent.basePath, 'vrrp', 'octavia-keepalived.live.conf'), 'utf8'), /^vrrp_track_file amphora_haproxy \{$/m);
    assert.ok(existsSync(join(agent.basePath, 'vrrp', 'check_script.sh')));
    await peer.call('start_vrrp');
    await waitFor('keepalived to take the VIP', () => /10\.77\.0\.20\/32/.test(ipn('addr', 'show', 'dev', 'eth1')), 15_000, 200);
    await peer.call('start_vrrp'); // a start on a running keepalived is a reload
    await peer.call('stop_vrrp');
    await waitFor('the VIP to be released', () => !/10\.77\.0\.20/.test(ipn('addr', 'show', 'dev', 'eth1')), 10_000, 200);
  });

  test('LVS listener: upload, listed as UDP, start reports the kernel lacking IPVS, delete', async () => {
    const listener = '7a7a7a7a-0000-4000-8000-000000000001';
    const config = [
      'virtual_server_group ipv4-group {',
      '    10.77.0.10 5353',
      '}',
      'virtual_server group ipv4-group {',
      '    lb_algo wrr',
      '    lb_kind NAT',
      '    protocol UDP',
      '    real_server 10.88.0.1 5353 {',
      '        weight 1',
      '    }',
      '}',
      '',
    ].join('\n');
    await peer.call('upload_udp_config', listener, config);
    const listeners = (await peer.call('get_all_listeners')) as { uuid: string; type: string; status: string }[];
    assert.equal(
      listeners.find((l) => l.uuid === listener),
      { status: 'OFFLINE', uuid: listener, type: 'UDP' },
    );
    // This machine's kernel has no IP_VS: keepalived exits right after forking,
    // and the agent reports that instead of claiming success.
    const started = await peer.callExpectingError('start_listener', listener);
    const ipvs = execFileSync('sh', ['-c', `ip netns exec ${amp.netns} ipvsadm -Ln 2>&1 || true`], { encoding: 'utf8' });
    if (/Protocol not available|Can't initialize ipvs/.test(ipvs)) assert.is(started, 'InternalServerError');
    else assert.is(started, null);
    await peer.call('delete_listener', listener);
    assert.not.ok(existsSync(join(agent.basePath, 'lvs', `octavia-keepalivedlvs-${listener}.conf`)));
    assert.is(await peer.callExpectingError('start_listener', listener), 'NotFound');
  });

  test('reboot: the NICs come back unconfigured in the main namespace; `interface up all` restores them, and again changes nothing', async () => {
    // What a reboot leaves: the hot-plugged NICs in the main namespace under
    // kernel names (moving them drops their addresses and routes), no VIP rule,
    // no nftables.
    ipn('link', 'set', 'eth1', 'netns', '1', 'name', 'aatboot1');
    ipn('link', 'set', 'eth2', 'netns', '1', 'name', 'aatboot2');
    ipn('rule', 'del', 'from', '10.77.0.10', 'lookup', '1');
    sh('ip', 'netns', 'exec', amp.netns, 'nft', 'flush', 'ruleset');
    assert.not.match(ipn('link', 'show'), /eth1|eth2/);

    const up = () => execFileSync(process.execPath, [MAIN, 'interface', 'up', 'all', '--config-file', agent.configFile], { encoding: 'utf8' });
    const first = up();
    assert.match(first, /^eth1: up \(moved back into the namespace\)$/m);
    assert.match(first, /^eth2: up \(moved back into the namespace\)$/m);
    assert.match(first, /^lo: up$/m);
    const addr = ipn('addr', 'show', 'dev', 'eth1');
    assert.match(addr, /mtu 1450/);
    assert.match(addr, /inet 10\.77\.0\.5\/24/);
    assert.match(addr, /inet 10\.77\.0\.10\/32/);
    assert.match(ipn('addr', 'show', 'dev', 'eth2'), /inet 10\.88\.0\.6\/24/);
    assert.match(ipn('route', 'show', 'table', '1'), /default via 10\.77\.0\.1 dev eth1/);
    assert.match(ipn('route', 'show'), /192\.0\.2\.0\/24 via 10\.77\.0\.254 dev eth1/);
    assert.match(ipn('rule', 'show'), /from 10\.77\.0\.10 lookup 1/);
    sh('ip', 'netns', 'exec', amp.netns, 'ping', '-c', '1', '-W', '2', '10.77.0.1');
    sh('ip', 'netns', 'exec', amp.netns, 'ping', '-c', '1', '-W', '2', '10.88.0.1');
    const ruleset = sh('ip', 'netns', 'exec', amp.netns, 'nft', 'list', 'ruleset');
    assert.match(ruleset, /table ip amphora-lvs-eth1 /);
    assert.match(ruleset, /table ip amphora-lvs-eth2 /);

    const second = up();
    assert.match(second, /^eth1: up$/m);
    assert.is(sh('ip', 'netns', 'exec', amp.netns, 'nft', 'list', 'ruleset'), ruleset, 'a second bring-up added rules');
    assert.is(ipn('rule', 'show').match(/from 10\.77\.0\.10 lookup 1/g)?.length, 1);
    const withRc = (args: string) =>
      execFileSync('sh', ['-c', `${process.execPath} ${MAIN} interface ${args} --config-file ${agent.configFile} 2>&1; echo rc=$?`], { encoding: 'utf8' });
    assert.match(withRc('up eth9'), /no interface file for eth9[\s\S]*rc=1\n$/);
    // down and up again, one interface: addresses, masquerade and link go, and come back.
    assert.match(withRc('down eth2'), /^eth2: down\nrc=0\n$/);
    assert.not.match(ipn('addr', 'show', 'dev', 'eth2'), /10\.88\.0\.6|state UP/);
    assert.not.match(sh('ip', 'netns', 'exec', amp.netns, 'nft', 'list', 'tables'), /amphora-lvs-eth2/);
    assert.match(withRc('up eth2'), /^eth2: up\nrc=0\n$/);
    assert.match(ipn('addr', 'show', 'dev', 'eth2'), /inet 10\.88\.0\.6\/24/);
    assert.match(sh('ip', 'netns', 'exec', amp.netns, 'nft', 'list', 'tables'), /amphora-lvs-eth2/);
    // A damaged file fails its interface only; the others still come up, and the exit status says so.
    writeFileSync(join(dir, 'interfaces', 'eth9.json'), '{"name": "eth9", ');
    const damaged = withRc('up all');
    rmSync(join(dir, 'interfaces', 'eth9.json'));
    assert.match(damaged, /^eth9: failed: unreadable interface file/m);
    assert.match(damaged, /^eth1: up$/m);
    assert.match(damaged, /rc=1\n$/);
  });

  test("SR-IOV port: bringing it up loads the VIP firewall base ruleset, so the controller's one rules call fills the VIP chain; no TCP notrack", async () => {
    const firewall = join(agent.basePath, 'nftables-vip.rules');
    rmSync(firewall, { force: true }); // as on a new amphora
    hotplug('aatsr0', SRIOV_MAC, '10.66.0.1/24');
    await peer.call('plug_network', {
      mac_address: SRIOV_MAC,
      fixed_ips: [{ ip_address: '10.66.0.5', subnet_cidr: '10.66.0.0/24', host_routes: [] }],
      mtu: 1500,
      is_sriov: true,
    });
    const nft = (...args: string[]) => sh('ip', 'netns', 'exec', amp.netns, 'nft', ...args);
    assert.ok(existsSync(firewall), 'the firewall file was not created at bring-up');
    assert.match(nft('list', 'table', 'inet', 'amphora_table'), /policy drop/);
    const masquerade = nft('list', 'table', 'ip', 'amphora-lvs-eth3');
    assert.match(masquerade, /masquerade/);
    assert.not.match(masquerade, /notrack/, 'SR-IOV: the firewall matches conntrack state');
    assert.is(await putVipRules([{ protocol: 'TCP', cidr: null, port: 80 }]), 200);
    assert.match(nft('list', 'table', 'inet', 'amphora_table'), /amphora_vip_chain[\s\S]*tcp dport 80 accept/, 'the first rules call was dropped');
    nft('flush', 'ruleset');
  });

  test.run();
});
