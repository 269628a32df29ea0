#!/usr/bin/env -S node --max-semi-space-size=1
// --max-semi-space-size=1: V8's young generation otherwise grows to 16 MB per
// semi-space under request load; 1 MB keeps the agent's RSS about a third lower
// for a few percent of throughput (bench/api).
// amphora-agent command line. `amphora-agent --config-file PATH` (Octavia's
// form) is the same as `amphora-agent serve --config-file PATH`.
import { serve } from './cli/serve.js';
import { heartbeat } from './cli/heartbeat.js';
import { vrrpCheck } from './cli/vrrp-check.js';

const USAGE = `usage: amphora-agent [serve] [--config-file PATH]
  serve       run the agent (default); without --config-file, a development
              configuration is created in ./.amphora-dev
  haproxy-vrrp-check SOCKET...
              keepalived's check: exit 0 when every haproxy stats socket answers
  heartbeat --print [--config-file PATH]
              show the next heartbeat message, decoded (not sent)
  render, check: not yet available (see the open issues)`;

async function main(argv: string[]): Promise<void> {
  const [first, ...rest] = argv;
  if (first === undefined || first.startsWith('--')) {
    if (first === '--help' || first === '-h') return void console.log(USAGE);
    return serve(argv);
  }
  switch (first) {
    case 'serve':
      return serve(rest);
    case 'heartbeat':
      return heartbeat(rest);
    case 'haproxy-vrrp-check':
      process.exitCode = await vrrpCheck(rest);
      return;
    case 'help':
      return void console.log(USAGE);
    default:
      console.error(`amphora-agent: unknown command "${first}"\n${USAGE}`);
      process.exit(2);
  }
}

main(process.argv.slice(2)).catch((err: Error) => {
  console.error(`amphora-agent: ${err.message}`);
  process.exit(1);
});
