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

// The slowest file (vm/reboot: a boot, a reboot and a reset under TCG) takes
// 7-14 minutes. A file still running after this long hangs (a failed
// assertion left a load generator or a server running): it is stopped and
// counted as failed, so CI ends.
const FILE_LIMIT_MS = 20 * 60_000;

function runFile(file: string): Promise<{ passed: number; failed: number; ms: number }> {
  const started = Date.now();
  return new Promise((resolve) => {
    // Agent logs at warn by default so test output stays readable.
    const env = { ...process.env, AMPHORA_AGENT_LOG_LEVEL: process.env.AMPHORA_AGENT_LOG_LEVEL ?? 'warn' };
    const child = spawn(process.execPath, ['--enable-source-maps', file], { stdio: ['ignore', 'pipe', 'pipe'], env });
    const limit = setTimeout(() => {
      console.log(`\n${relative(here, file)}: still running after ${FILE_LIMIT_MS / 60_000} minutes; stopped`);
      child.kill('SIGKILL');
    }, FILE_LIMIT_MS);
    let out = '';
    child.stdout.on('data', (d) => { out += d; process.stdout.write(d); });
    child.stderr.on('data', (d) => process.stderr.write(d));
    child.on('close', (code) => {
      clearTimeout(limit);
      // uvu prints "Total: N" and "Passed: N" per file (colours stripped).
      // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colour codes start with ESC
      const plain = out.replace(/\x1b\[[0-9;]*m/g, '');
      const total = [...plain.matchAll(/Total:\s+(\d+)/g)].reduce((s, m) => s + Number(m[1]), 0);
      const passed = [...plain.matchAll(/Passed:\s+(\d+)/g)].reduce((s, m) => s + Number(m[1]), 0);
      let failed = total - passed;
      // A crash before uvu's summary, or a non-zero exit, is a failure too.
      if (code !== 0 && failed === 0) failed = 1;
      resolve({ passed, failed, ms: Date.now() - started });
    });
  });
}

let passed = 0;
let failed = 0;
const failedFiles: string[] = [];
for (const file of files) {
  const name = relative(here, file);
  console.log(`\n=== ${name}`);
  const r = await runFile(file);
  passed += r.passed;
  failed += r.failed;
  if (r.failed > 0) failedFiles.push(name);
  console.log(`=== ${name}: ${r.passed} passed, ${r.failed} failed (${(r.ms / 1000).toFixed(1)} s)`);
}
if (failedFiles.length > 0) console.log(`\nFailed files:\n  ${failedFiles.join('\n  ')}`);
console.log(`\n${passed} passed, ${failed} failed`);
process.exit(failed > 0 || files.length === 0 ? 1 : 0);
