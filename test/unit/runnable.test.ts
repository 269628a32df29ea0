// What the engine loads for a config older controllers render: each legacy
// form translated only where the binary refuses it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runnableConfig } from '../../agent/haproxy/config/runnable.js';

// Octavia 16's PROMETHEUS endpoint, and an HTTP/1.0 monitor as 11 to 16 render it.
const SIXTEEN = [
  'frontend prometheus-exporter-internal-endpoint',
  '    bind 127.0.0.1:9101',
  '    mode http',
  '    no log',
  '    option http-use-htx',
  '    http-request use-service prometheus-exporter if { path /metrics }',
  'backend pool-1:listener-1',
  '    mode http',
  String.raw`    option httpchk GET /healthz HTTP/1.0\r\n`,
  '    server m1 10.0.0.1:80 weight 1 check',
  '',
].join('\n');

test('a binary that takes both forms loads the text as uploaded', () => {
  assert.is(runnableConfig(SIXTEEN, { legacyHttpchkAccepted: true, httpUseHtxAccepted: true }), SIXTEEN);
});

test('option http-use-htx is dropped where refused; every other line stays', () => {
  const out = runnableConfig(SIXTEEN, { legacyHttpchkAccepted: true, httpUseHtxAccepted: false });
  assert.not.match(out, /http-use-htx/);
  assert.is(out, SIXTEEN.replace('    option http-use-htx\n', ''));
});

test('both forms translated where both are refused', () => {
  const out = runnableConfig(SIXTEEN, { legacyHttpchkAccepted: false, httpUseHtxAccepted: false });
  assert.not.match(out, /http-use-htx/);
  // biome-ignore lint/complexity/noAdjacentSpacesInRegex: the indentation of the config text, as written
  assert.match(out, /^    option httpchk\n    http-check send meth GET uri \/healthz ver HTTP\/1\.0$/m);
});

test.run();
