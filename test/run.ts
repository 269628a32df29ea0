// Runs every test file in its own process (namespaces, haproxy processes and
// sockets stay isolated per file) and ends with the line CI reads:
// "N passed, N failed". Optional arguments filter files by path substring.
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const filters = process.argv.slice(2);

function findTests(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...findTests(p));
    else if (name.endsWith('.test.js')) out.push(p);
  }
  return out;
}

const order = ['unit', 'integration', 'interop'];
const files = findTests(here)
  .filter((f) => filters.length === 0 || filters.some((s) => relative(here, f).includes(s)))
  .sort((a, b) => order.indexOf(relative(here, a).split('/')[0]!) - order.indexOf(relative(here, b).split('/')[0]!));

// The slowest file (vm/reboot: a boot, a reboot and a reset under TCG, beside
// two more VMs) takes 10-16 minutes. A file still running after this long
// hangs (a failed assertion left a load generator or a server running): it is
// stopped and counted as failed, so CI ends.
const FILE_LIMIT_MS = 30 * 60_000;

// Files that run side by side, in lanes (a lane's files one after another),
// each file's output printed whole when it ends. Each boots VMs under TCG and
// mostly waits on them: vm/reboot (a boot and two reboots, 10-11 minutes)
// takes about as long as vm/boot and vm/log-offload (two amphorae) together,
// so the group costs the longer lane instead of the sum. At most three VMs run
// at once on a 2-core machine.
const SIDE_BY_SIDE = [[['vm/reboot.test.js'], ['vm/boot.test.js', 'vm/log-offload.test.js']]];

interface FileResult {
  name: string;
  passed: number;
  failed: number;
  ms: number;
}

function runFile(file: string, buffered: boolean): Promise<FileResult> {
  const name = relative(here, file);
  const started = Date.now();
  let buffer = '';
  const print = (stream: NodeJS.WriteStream, d: Buffer) => (buffered ? (buffer += d) : stream.write(d));
  if (!buffered) console.log(`\n=== ${name}`);
  return new Promise((resolve) => {
    // Agent logs at warn by default so test output stays readable.
    const env = { ...process.env, AMPHORA_AGENT_LOG_LEVEL: process.env.AMPHORA_AGENT_LOG_LEVEL ?? 'warn' };
    const child = spawn(process.execPath, ['--enable-source-maps', file], { stdio: ['ignore', 'pipe', 'pipe'], env });
    const limit = setTimeout(() => {
      buffer += `\n${name}: still running after ${FILE_LIMIT_MS / 60_000} minutes; stopped\n`;
      if (!buffered) process.stdout.write(buffer);
      child.kill('SIGKILL');
    }, FILE_LIMIT_MS);
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d;
      print(process.stdout, d);
    });
    child.stderr.on('data', (d: Buffer) => print(process.stderr, d));
    child.on('close', (code) => {
      clearTimeout(limit);
      if (buffered) process.stdout.write(`\n=== ${name} (ran side by side with another file)\n${buffer}`);
      // uvu prints "Total: N" and "Passed: N" per file (colours stripped).
      // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colour codes start with ESC
      const plain = out.replace(/\x1b\[[0-9;]*m/g, '');
      const total = [...plain.matchAll(/Total:\s+(\d+)/g)].reduce((s, m) => s + Number(m[1]), 0);
      const passed = [...plain.matchAll(/Passed:\s+(\d+)/g)].reduce((s, m) => s + Number(m[1]), 0);
      let failed = total - passed;
      // A crash before uvu's summary, or a non-zero exit, is a failure too.
      if (code !== 0 && failed === 0) failed = 1;
      const result = { name, passed, failed, ms: Date.now() - started };
      console.log(`=== ${name}: ${passed} passed, ${failed} failed (${(result.ms / 1000).toFixed(1)} s)`);
      resolve(result);
    });
  });
}

/** The files in order as lanes to run at once: one lane of one file, or a side-by-side group at the place of its first file. */
function slots(list: string[]): string[][][] {
  const out: string[][][] = [];
  const placed = new Set<string>();
  const selected = (n: string) => list.find((f) => relative(here, f) === n);
  for (const file of list) {
    if (placed.has(file)) continue;
    const group = SIDE_BY_SIDE.find((g) => g.flat().includes(relative(here, file)));
    const lanes = group ? group.map((lane) => lane.map(selected).filter((f) => f !== undefined)).filter((lane) => lane.length > 0) : [[file]];
    for (const f of lanes.flat()) placed.add(f);
    out.push(lanes);
  }
  return out;
}

async function runLane(lane: string[], buffered: boolean): Promise<FileResult[]> {
  const results: FileResult[] = [];
  for (const f of lane) results.push(await runFile(f, buffered));
  return results;
}

let passed = 0;
let failed = 0;
const failedFiles: string[] = [];
for (const lanes of slots(files)) {
  const results = (await Promise.all(lanes.map((lane) => runLane(lane, lanes.length > 1)))).flat();
  for (const r of results) {
    passed += r.passed;
    failed += r.failed;
    if (r.failed > 0) failedFiles.push(r.name);
  }
}
if (failedFiles.length > 0) console.log(`\nFailed files:\n  ${failedFiles.join('\n  ')}`);
console.log(`\n${passed} passed, ${failed} failed`);
process.exit(failed > 0 || files.length === 0 ? 1 : 0);
