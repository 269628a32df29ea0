// The test port table: blocks apart, ranges apart, and no port outside them.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { portBlocks, testPorts } from '../helpers/ports.js';

test('no two test files share a port', () => {
  const blocks = portBlocks().sort((a, b) => a.first - b.first);
  for (let k = 1; k < blocks.length; k++) {
    const [a, b] = [blocks[k - 1]!, blocks[k]!];
    assert.ok(a.first + a.size <= b.first, `${a.file} overlaps ${b.file}`);
  }
});

test('ranges of one file follow each other, and a port outside its range or block is refused', () => {
  const ports = testPorts('octavia-controller-releases');
  const agents = ports.range(2);
  const others = ports.range(3);
  assert.equal(
    [agents(0), agents(1), others(0), others(2)].map((p) => p - ports.first),
    [0, 1, 2, 4],
  );
  assert.throws(() => agents(2), /outside a range of 2/);
  assert.throws(() => ports.range(ports.size), /do not fit/);
});

test.run();
