#!/usr/bin/env -S node --max-semi-space-size=1 --optimize-for-size --no-turbofan
// --max-semi-space-size=1: V8's young generation otherwise grows to 16 MB per
// semi-space under request load; 1 MB keeps the agent's RSS about a third lower
// for a few percent of throughput (bench/api). --optimize-for-size: V8 grows
// its heap less eagerly; after 5 s of requests at full speed the agent's
// anonymous memory stayed at its idle 24 MB instead of 42 MB (bench/api, PSS
// after load 0.69x -> 0.55x Octavia's agent). --no-turbofan: V8 optimizes no code. Its
// code is 3.6 MB of node's binary that an optimization pages in, plus its
// compile-time zone memory; the agent works in short bursts where Sparkplug's
// baseline code is as fast (render, config reading and policy at 10,000
// members within noise) and idle PSS drops by 5-7 MB. The image's wrapper
// and `npm start` pass the same flags.
// amphora-agent command line. `amphora-agent --config-file PATH` (Octavia's
// form) is the same as `amphora-agent serve --config-file PATH`.
//
// Each command loads only its own modules (dynamic import below): the whole
// agent costs about 0.5 s of CPU and 40 MB to load natively, ten times that
// under emulation, and keepalived runs haproxy-vrrp-check every few seconds.
import { INTERFACE_USAGE, RENDER_USAGE, UsageError } from './cli/usage.js';

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
    return (await import('./cli/serve.js')).serve(argv);
  }
  switch (first) {
    case 'serve':
      return (await import('./cli/serve.js')).serve(rest);
    case 'heartbeat':
      return (await import('./cli/heartbeat.js')).heartbeat(rest);
    case 'haproxy-vrrp-check':
      process.exitCode = await (await import('./cli/vrrp-check.js')).vrrpCheck(rest);
      return;
    case 'render':
      process.exitCode = await (await import('./cli/render.js')).renderCommand(rest);
      return;
    case 'check':
      process.exitCode = await (await import('./cli/render.js')).checkCommand(rest);
      return;
    case 'interface':
      process.exitCode = await (await import('./cli/interface.js')).interfaceCommand(rest);
      return;
    case 'openapi': {
      const { openApiDocument } = await import('./api/v2/openapi.js');
      return void process.stdout.write(`${JSON.stringify(openApiDocument(), null, 2)}\n`);
    }
    case 'help':
      return void console.log(USAGE);
    default:
      console.error(`amphora-agent: unknown command "${first}"\n${USAGE}`);
      process.exit(2);
  }
}

// Exit status 2 when the command line or the spec it names is wrong, 1 for
// any other failure (errors.ts: the CLI reads no error kinds).
main(process.argv.slice(2)).catch(async (err: Error) => {
  // Loaded already when a spec was validated; cheap when not.
  const { SpecError } = await import('./model/spec/validate.js');
  if (err instanceof SpecError) {
    console.error(`amphora-agent: invalid spec:\n${err.problems.map((p) => `  ${p}`).join('\n')}`);
    process.exit(2);
  }
  console.error(`amphora-agent: ${err.message}`);
  process.exit(err instanceof UsageError ? 2 : 1);
});
