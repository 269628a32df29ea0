// A TestBackend (../backend.ts) run inside a member's namespace (`ip netns
// exec <member> node member-backend-main.js NAME HOST PORT MODE`): a process
// joins a network namespace only by starting in it. Commands on stdin, one a
// line: `mode <ready|not-ready|reset|refused>` and `stats`; each answered by
// one JSON line of counters. Stops when stdin closes.
import { createInterface } from 'node:readline';
import { TestBackend, type BackendMode } from '../backend.js';

const [name, host, port, mode] = process.argv.slice(2);
const backend = new TestBackend(name!, host!, Number(port), mode as BackendMode);

const stats = () => JSON.stringify({ mode: backend.mode, requests: backend.requests, checks: backend.checks, firstServedAt: backend.firstServedAt });

await backend.start();
process.stdout.write(`${stats()}\n`);
const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  const [cmd, arg] = line.trim().split(/\s+/);
  if (cmd === 'mode') await backend.setMode(arg as BackendMode);
  process.stdout.write(`${stats()}\n`);
}
await backend.stop();
process.exit(0);
