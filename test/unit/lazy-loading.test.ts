// Each CLI command loads only what it uses, and the agent's start loads none
// of the packages only some paths need (issue 14: under emulation, every
// package loaded at start costs an amphora's first boot seconds). The
// packages are CommonJS, so the process's require cache, printed at exit,
// tells which were loaded.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const MAIN = fileURLToPath(new URL('../../agent/main.js', import.meta.url));
const SERVE = fileURLToPath(new URL('../../agent/cli/serve.js', import.meta.url));
const HEAVY = ['ajv', 'ajv-formats', 'nunjucks', 'prom-client', 'express', 'pino'];

// Prints the packages in the require cache (node_modules/<name>/...) when the process exits.
const REPORT = `data:text/javascript,${encodeURIComponent(`
import { createRequire } from 'node:module';
// Any base will do: the require cache is the process's.
const require = createRequire('/');
process.on('exit', () => {
  const names = new Set(Object.keys(require.cache).map((p) => /node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(p)?.[1]).filter(Boolean));
  process.stderr.write('LOADED ' + JSON.stringify([...names].sort()) + '\\n');
});`)}`;

function loaded(args: string[]): string[] {
  const res = spawnSync(process.execPath, ['--import', REPORT, ...args], { encoding: 'utf8', env: { ...process.env, AMPHORA_AGENT_LOG_LEVEL: 'silent' } });
  const line = res.stderr.split('\n').find((l) => l.startsWith('LOADED '));
  assert.ok(line, `no report from ${args.join(' ')}: ${res.stderr}`);
  return (JSON.parse(line!.slice('LOADED '.length)) as string[]).filter((n) => HEAVY.includes(n));
}

test('haproxy-vrrp-check, help and openapi load none of the heavy packages', () => {
  assert.equal(loaded([MAIN, 'haproxy-vrrp-check', '/nonexistent.sock']), []);
  assert.equal(loaded([MAIN, 'help']), []);
  assert.equal(loaded([MAIN, 'openapi']), []);
});

test('interface loads no renderer, schema compiler, metrics or web framework', () => {
  // It fails (no such config file) after loading its modules: the imports are what counts.
  assert.equal(
    loaded([MAIN, 'interface', 'up', 'eth9', '--config-file', '/nonexistent.conf']).filter((n) => n !== 'pino'),
    [],
  );
});

test('serve loads express and pino, not the schema compiler, the renderer or the metrics registry', () => {
  assert.equal(loaded(['--input-type=module', '-e', `await import(${JSON.stringify(SERVE)})`]), ['express', 'pino']);
});

test('render loads the schema compiler and the renderer when it renders', () => {
  const spec = fileURLToPath(new URL('../../../test/fixtures/specs/http-basic.json', import.meta.url));
  const got = loaded([MAIN, 'render', spec, '--haproxy-version', '2.6']);
  for (const n of ['ajv', 'ajv-formats', 'nunjucks']) assert.ok(got.includes(n), `${n} not loaded by render: ${got}`);
  assert.not.ok(got.includes('express'));
  assert.not.ok(got.includes('prom-client'));
});

test.run();
