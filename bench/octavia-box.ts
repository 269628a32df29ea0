// Side by side in Octavia in a box (docs/octavia-box.md): the same Octavia
// control plane and the same scenarios (test/interop/octavia-whole), once
// with amphorae running this agent and once with Octavia's own agent
// (Debian's octavia-agent), one after the other in the same run. Prints a
// table of the scenarios' figures with the ratio this/reference.
//
//   sudo npm run bench:octavia-box          (about 10 minutes once cached)
//   AMPHORA_OCTAVIA_BOX_SUITE=trixie ...    Octavia 16 instead of 19
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const TEST = fileURLToPath(new URL('../test/interop/octavia-whole.test.js', import.meta.url));

interface Run {
  agent: string;
  octavia: string;
  figures: Record<string, number>;
}

const ROWS: [key: string, label: string][] = [
  ['create_active_s', 'fully populated create: ACTIVE (s)'],
  ['create_online_s', 'fully populated create: every member ONLINE (s)'],
  ['batch_active_s', 'batch member update: ACTIVE (s)'],
  ['rolling_requests', 'rolling replacement: requests'],
  ['rolling_failed', 'rolling replacement: failed requests'],
  ['failover_api_s', 'failover API: ACTIVE again (s)'],
  ['hm_failover_s', 'amphora killed: serving again (s)'],
  ['cert_rotation_s', 'certificate rotation: new certificate presented (s)'],
  ['as_create_s', 'ACTIVE_STANDBY create: serving (s)'],
  ['as_failed', 'ACTIVE_STANDBY master killed: failed requests'],
  ['as_gap_ms', 'ACTIVE_STANDBY master killed: longest time without an answer (ms)'],
  ['as_replaced_s', 'ACTIVE_STANDBY: dead amphora replaced (s)'],
  ['memory_agent_mib', 'amphora memory (PSS): the agent (MiB)'],
  ['memory_haproxy_mib', 'amphora memory (PSS): haproxy (MiB)'],
  ['memory_amphora_mib', 'amphora memory (PSS): whole container (MiB)'],
];

function runWith(agent: 'this' | 'reference'): Run {
  const out = join(mkdtempSync(join(tmpdir(), 'octavia-box-bench-')), `${agent}.json`);
  const r = spawnSync(process.execPath, ['--enable-source-maps', TEST], {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, AMPHORA_OCTAVIA_BOX_AGENT: agent, AMPHORA_OCTAVIA_BOX_FIGURES: out, AMPHORA_IMAGE_REUSE: process.env.AMPHORA_IMAGE_REUSE ?? '1' },
  });
  if (r.status !== 0) console.error(`octavia-whole with ${agent} agent exited ${r.status}: its figures may be incomplete`);
  return JSON.parse(readFileSync(out, 'utf8')) as Run;
}

const ours = runWith('this');
const reference = runWith('reference');
const cell = (v: number | undefined) => (v === undefined ? '-' : String(v));
const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || b === 0 ? '-' : `${(a / b).toFixed(2)}x`);
console.log(`\nOctavia ${ours.octavia} in a box, ${new Date().toISOString().slice(0, 10)}: this agent and Octavia's own, same scenarios, same run\n`);
console.log("| figure | this agent | Octavia's agent | this / Octavia's |");
console.log('|---|---|---|---|');
for (const [key, label] of ROWS) {
  console.log(`| ${label} | ${cell(ours.figures[key])} | ${cell(reference.figures[key])} | ${ratio(ours.figures[key], reference.figures[key])} |`);
}
