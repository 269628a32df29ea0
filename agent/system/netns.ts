// Network namespaces: the amphora runs haproxy in its own namespace
// (amphora-haproxy by default), created on demand like amphora-netns.service does.
import { exists } from './files.js';
import { run } from './exec.js';

export async function ensureNetns(name: string): Promise<void> {
  if (await exists(`/run/netns/${name}`)) return;
  const res = await run(['ip', 'netns', 'add', name]);
  if (res.exitCode !== 0 && !(await exists(`/run/netns/${name}`))) {
    throw new Error(`cannot create network namespace ${name}: ${res.output.trim()}`);
  }
  // Loopback is down in a fresh namespace; haproxy health checks and local
  // listeners need it.
  await run(['ip', '-n', name, 'link', 'set', 'lo', 'up']);
}

/**
 * Run a command in a private mount namespace whose /run/netns holds just an
 * empty network namespace named `name` (none when null): the command sees the namespace an
 * amphora has, whatever exists on this machine, and nothing it does there
 * reaches this machine's namespaces. (keepalived -t enters the namespace its
 * config names and checks more once it can; without one it checks less.)
 */
export function runWithScratchNetns(name: string | null, argv: string[]) {
  const script =
    'ns=$1; shift; mkdir -p /run/netns && mount -t tmpfs -o mode=0755 scratch-netns /run/netns && { [ -z "$ns" ] || ip netns add "$ns"; } && exec "$@"';
  return run(['unshare', '--mount', '--propagation', 'private', '--', 'sh', '-c', script, 'sh', name ?? '', ...argv]);
}
