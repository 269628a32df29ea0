// Address announcements after haproxy or LVS (re)starts in SINGLE topology:
// a gratuitous ARP (IPv4) or unsolicited neighbour advertisement (IPv6) for
// each address the load balancer listens on, so upstream routers learn the
// amphora's MAC at once after a failover. Best effort, as in Octavia: a
// missing tool or a failure is logged, never returned to the caller.
import type { Logger } from '../log.js';
import { run } from '../system/exec.js';
import { ipFamily } from './ip.js';
import { interfaceWithAddress } from './interfaces.js';

// Debian's ndisc6 package has no ndsend (Octavia's images build it from
// elsewhere): without it, IPv6 announcements are left to the kernel
// (ndisc_notify), and that is said once rather than at every reload.
let ndsendMissing: boolean | null = null;

async function haveNdsend(log: Logger): Promise<boolean> {
  if (ndsendMissing === null) {
    ndsendMissing = (await run(['sh', '-c', 'command -v ndsend'])).exitCode !== 0;
    if (ndsendMissing) log.info('ndsend is not installed: IPv6 addresses are not announced by the agent (the kernel does with ndisc_notify)');
  }
  return !ndsendMissing;
}

export async function announceAddresses(netns: string, addresses: string[], log: Logger): Promise<void> {
  for (const address of new Set(addresses)) {
    if (!ipFamily(address)) continue;
    if (ipFamily(address) === 6 && !(await haveNdsend(log))) continue;
    const ifname = await interfaceWithAddress(netns, address);
    if (!ifname) continue;
    const argv = ipFamily(address) === 4 ? ['arping', '-U', '-c', '1', '-I', ifname, address] : ['ndsend', address, ifname];
    const res = await run(argv, { netns, timeoutMs: 5000 }).catch((err: Error) => ({ exitCode: -1, output: err.message }));
    if (res.exitCode !== 0) log.warn({ address, ifname, output: res.output.trim() }, 'address announcement failed');
  }
}
