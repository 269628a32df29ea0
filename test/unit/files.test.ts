// The agent's one writer: atomic writes in two halves (stage, then commit),
// as the runtime path uses them while haproxy takes its commands.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stageFiles, writeFilesAtomic } from '../../agent/system/files.js';

const scratch = () => mkdtempSync(join(tmpdir(), 'aat-files-'));

test('staged files stay invisible until commit, then all land with their mode', async () => {
  const dir = scratch();
  try {
    writeFileSync(join(dir, 'haproxy.cfg'), 'old');
    const staged = await stageFiles([{ path: [join(dir, 'haproxy.cfg'), join(dir, 'live.cfg')], data: 'new' }, { path: join(dir, 'spec.json'), data: '{}' }], 0o640);
    assert.is(readFileSync(join(dir, 'haproxy.cfg'), 'utf8'), 'old');
    assert.equal(readdirSync(dir).filter((n) => !n.startsWith('.')), ['haproxy.cfg']);
    staged.commit();
    assert.equal(readdirSync(dir).sort(), ['haproxy.cfg', 'live.cfg', 'spec.json']);
    assert.is(readFileSync(join(dir, 'live.cfg'), 'utf8'), 'new');
    assert.is(statSync(join(dir, 'spec.json')).mode & 0o777, 0o640);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('discarded staging leaves the old files and no temporary files', async () => {
  const dir = scratch();
  try {
    writeFileSync(join(dir, 'haproxy.cfg'), 'old');
    (await stageFiles([{ path: join(dir, 'haproxy.cfg'), data: 'new' }])).discard();
    assert.equal(readdirSync(dir), ['haproxy.cfg']);
    assert.is(readFileSync(join(dir, 'haproxy.cfg'), 'utf8'), 'old');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a failed write rejects and leaves no temporary files; paths of two directories are refused', async () => {
  const dir = scratch();
  const rejects = (p: Promise<unknown>, pattern: RegExp) => p.then(() => assert.unreachable('should reject'), (err: Error) => assert.match(err.message, pattern));
  try {
    // The second file's temporary name is longer than a file name may be:
    // staging fails after the first temporary file exists.
    await rejects(writeFilesAtomic([{ path: join(dir, 'a'), data: 'x' }, { path: join(dir, 'b'.repeat(240)), data: 'y' }]), /ENAMETOOLONG/);
    assert.equal(readdirSync(dir), []);
    await rejects(writeFilesAtomic([{ path: join(dir, 'a'), data: 'x' }, { path: join(dir, 'sub', 'b'), data: 'y' }]), /share one directory/);
    assert.equal(readdirSync(dir), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
