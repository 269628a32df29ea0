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
