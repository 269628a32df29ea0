// A stand-in agent process for crash tests: applies ever-newer configurations
// through the engine until it is killed. Argument: JSON {haproxy, dir, netns, lbId, bind, members}.
import { HAPROXIES } from './haproxies.js';
import { applyConfig, testEngine } from './engine.js';
import { octaviaStyleConfig } from './octavia-config.js';

const args = JSON.parse(process.argv[2]!) as {
  haproxy: number;
  dir: string;
  netns: string;
  lbId: string;
  bind: string;
  start: number;
  members: { id: string; address: string }[];
};
const engine = testEngine(HAPROXIES[args.haproxy]!, args.dir, args.netns);
for (let generation = args.start; ; generation++) {
  await applyConfig(
    engine,
    args.lbId,
    'amp',
    octaviaStyleConfig({
      lbId: args.lbId,
      baseDir: args.dir,
      bind: args.bind,
      members: args.members,
      generation,
      markGeneration: true,
    }),
  );
  process.stdout.write(`applied ${generation}\n`);
}
