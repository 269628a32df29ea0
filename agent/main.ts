#!/usr/bin/env -S node --max-semi-space-size=1
// --max-semi-space-size=1: V8's young generation otherwise grows to 16 MB per
// semi-space under request load; 1 MB keeps the agent's RSS about a third lower
// for a few percent of throughput (bench/api).
// amphora-agent command line. `amphora-agent --config-file PATH` (Octavia's
// form) is the same as `amphora-agent serve --config-file PATH`.
import { serve } from './cli/serve.js';
import { heartbeat } from './cli/heartbeat.js';
import { vrrpCheck } from './cli/vrrp-check.js';
import { checkCommand, renderCommand, RENDER_USAGE, UsageError } from './cli/render.js';
import { SpecError } from './spec/validate.js';
import { openApiDocument } from './api/v2/openapi.js';
import { interfaceCommand, INTERFACE_USAGE } from './cli/interface.js';

const USAGE = `usage: amphora-agent [serve] [--config-file PATH]
  serve       run the agent (default); without --config-file, a development
              configuration is created in ./.amphora-dev
  haproxy-vrrp-check SOCKET...
              exit 0 when every haproxy stats socket answers (keepalived runs
              templates/keepalived/haproxy-vrrp-check.sh, the same check in sh)
  heartbeat --print [--config-file PATH]
              show the next heartbeat message, decoded (not sent)
${RENDER_USAGE}
${INTERFACE_USAGE}
  openapi     print the OpenAPI document of API 2.0 (docs/openapi-2.0.json)`;

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
    case 'render':
      process.exitCode = await renderCommand(rest);
      return;
    case 'check':
      process.exitCode = await checkCommand(rest);
      return;
    case 'interface':
      process.exitCode = await interfaceCommand(rest);
      return;
    case 'openapi':
      return void process.stdout.write(`${JSON.stringify(openApiDocument(), null, 2)}\n`);
    case 'help':
      return void console.log(USAGE);
    default:
      console.error(`amphora-agent: unknown command "${first}"\n${USAGE}`);
      process.exit(2);
  }
}

main(process.argv.slice(2)).catch((err: Error) => {
  if (err instanceof SpecError) {
    console.error(`amphora-agent: invalid spec:\n${err.problems.map((p) => `  ${p}`).join('\n')}`);
    process.exit(2);
  }
  console.error(`amphora-agent: ${err.message}`);
  process.exit(err instanceof UsageError ? 2 : 1);
});
