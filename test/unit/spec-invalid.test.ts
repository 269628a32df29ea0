// The malformed specs of test/fixtures/specs/invalid, each refused by the
// validator with the exact field path its file names. Pure: no haproxy,
// no Octavia.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SpecError, validateSpec } from '../../agent/model/spec/validate.js';

const INVALID = join(process.cwd(), 'test', 'fixtures', 'specs', 'invalid');
const invalid = readdirSync(INVALID)
  .filter((f) => f.endsWith('.json'))
  .sort();

for (const file of invalid) {
  test(`invalid/${file}: refused with the exact field path`, () => {
    const { spec, error } = JSON.parse(readFileSync(join(INVALID, file), 'utf8')) as { spec: unknown; error: string };
    try {
      validateSpec(spec);
    } catch (err) {
      assert.instance(err, SpecError);
      assert.ok(
        (err as SpecError).problems.some((p) => p.startsWith(error)),
        `expected "${error}", got: ${(err as Error).message}`,
      );
      return;
    }
    assert.unreachable('the malformed spec was accepted');
  });
}

test.run();
