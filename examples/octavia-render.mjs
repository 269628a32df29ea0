#!/usr/bin/env node
// The haproxy.cfg an unmodified Octavia controller renders for a spec, with
// Octavia's own JinjaTemplater (Debian's python3-octavia: apt-get install
// python3-octavia), for API 1.0 on the development default:
//
//   node examples/octavia-render.mjs examples/quickstart.json > /tmp/haproxy.cfg
//
// The spec is mapped to Octavia's data models by test/interop/octavia_render.py
// (the render-parity tests' reference). Octavia's controller options are the
// development default's: base_path .amphora-dev/lib and a default connection
// limit of 5000 (see agent/config/dev-default.ts). Needs the built agent
// (`npm start` builds it) for the spec's defaults.
import { spawn, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const file = process.argv[2];
if (!file) {
  console.error('usage: node examples/octavia-render.mjs SPEC.json');
  process.exit(2);
}
const { validateSpec } = await import(join(root, 'dist/agent/model/spec/validate.js'));
const spec = validateSpec(JSON.parse(readFileSync(file, 'utf8')));
const version = /version (\d+\.\d+)/i.exec(execFileSync('haproxy', ['-v'], { encoding: 'utf8' }))?.[1] ?? '2.6';
const basePath = join(root, '.amphora-dev', 'lib');
const request = {
  op: 'render',
  args: {
    spec, haproxy_version: version, amp_details: null,
    settings: { base_path: basePath, base_cert_dir: join(basePath, 'certs'), connection_logging: true, default_connection_limit: 5000 },
  },
};
const script = readFileSync(join(root, 'test/interop/octavia_render.py'), 'utf8');
const python = spawn('/usr/bin/python3', ['-c', script], { stdio: ['pipe', 'pipe', 'inherit'] });
let out = '';
python.stdout.on('data', (d) => { out += d; });
python.on('close', () => {
  const answer = JSON.parse(out.split('\n')[0] || '{}');
  if (!answer.ok) {
    console.error(`Octavia's templater failed: ${answer.exception ?? 'no answer'}: ${answer.message ?? out}`);
    process.exit(1);
  }
  process.stdout.write(answer.result.haproxy);
});
python.stdin.end(`${JSON.stringify(request)}\n`);
