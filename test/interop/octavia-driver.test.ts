// The Octavia amphora driver (octavia-driver/, issue 30) under Octavia's own
// code: its unit tests in Octavia 19's and 16's Python (sid's and trixie's
// root filesystems), then the agent judging every spec they built
// (`amphora-agent render` validates a spec as a PUT does). Through the
// driver's own script, as a developer runs it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../../..', import.meta.url));

for (const [suite, octavia] of [
  ['sid', 19],
  ['trixie', 16],
] as const) {
  test(`Octavia ${octavia} (${suite}): the driver's tests pass and the agent renders every spec they built`, () => {
    const run = spawnSync('bash', ['octavia-driver/run-tests.sh', suite], {
      cwd: REPO,
      encoding: 'utf8',
      env: { ...process.env, AMPHORA_AGENT_BUILT: '1' },
      timeout: 600_000,
    });
    const output = `${run.stdout}\n${run.stderr}`;
    assert.is(run.status, 0, output.slice(-4000));
    const summary = new RegExp(`^Octavia ${octavia} \\(${suite}\\): (\\d+) tests, OK[^;]*; the agent renders (\\d+) of (\\d+) specs$`, 'm').exec(output);
    assert.ok(summary, `no summary line: ${output.slice(-2000)}`);
    const [, tests, rendered, specs] = summary.map(Number);
    assert.ok(tests! >= 40, `${tests} tests ran`);
    assert.ok(specs! > 0 && rendered === specs, `${rendered} of ${specs} specs rendered`);
  });
}

test.run();
