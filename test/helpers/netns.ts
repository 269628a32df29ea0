// A test network: a fresh namespace joined to the host by a veth pair. haproxy
// runs inside it like on an amphora; backends listen on the host end. Cleanup
// runs on every exit path, including a failing assertion or an uncaught error.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

export interface TestNetwork {
  netns: string;
  /** Address of the host end (backends listen here). */
  hostIp: string;
  /** Address inside the namespace (haproxy binds here). */
  nsIp: string;
  destroy(): void;
}

const live = new Set<TestNetwork>();
let hooked = false;

function sh(args: string[]): void {
  execFileSync(args[0]!, args.slice(1), { stdio: 'ignore' });
}

function quiet(args: string[]): void {
  try {
    sh(args);
  } catch {
    // already gone
  }
}

export function createTestNetwork(): TestNetwork {
  if (!hooked) {
    hooked = true;
    process.on('exit', () => {
      for (const n of live) n.destroy();
    });
    for (const sig of ['SIGINT', 'SIGTERM'] as const) {
      process.on(sig, () => process.exit(130));
    }
  }
  const id = randomBytes(3).toString('hex');
  const netns = `aat-${id}`;
  const hostIf = `aath${id}`;
  const nsIf = `aatn${id}`;
  // A /30 in 10.200.0.0/16 from the random id, so parallel runs do not collide.
  const n = parseInt(id, 16) % 16384;
  const base = `10.${200 + ((n >> 8) % 50)}.${n & 255}`;
  const hostIp = `${base}.1`;
  const nsIp = `${base}.2`;
  sh(['ip', 'netns', 'add', netns]);
  sh(['ip', 'link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nsIf]);
  sh(['ip', 'link', 'set', nsIf, 'netns', netns]);
  sh(['ip', 'addr', 'add', `${hostIp}/30`, 'dev', hostIf]);
  sh(['ip', 'link', 'set', hostIf, 'up']);
  sh(['ip', '-n', netns, 'addr', 'add', `${nsIp}/30`, 'dev', nsIf]);
  sh(['ip', '-n', netns, 'link', 'set', nsIf, 'up']);
  sh(['ip', '-n', netns, 'link', 'set', 'lo', 'up']);
  const net: TestNetwork = {
    netns,
    hostIp,
    nsIp,
    destroy() {
      if (!live.delete(net)) return;
      // Kill whatever still runs in the namespace (haproxy left by a failed test).
      try {
        const pids = execFileSync('ip', ['netns', 'pids', netns], { encoding: 'utf8' }).split('\n').filter(Boolean);
        for (const pid of pids) quiet(['kill', '-9', pid]);
      } catch {
        // namespace already gone
      }
      quiet(['ip', 'link', 'del', hostIf]);
      quiet(['ip', 'netns', 'del', netns]);
    },
  };
  live.add(net);
  return net;
}
