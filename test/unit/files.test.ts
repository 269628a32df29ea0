// The agent's one writer: atomic writes in two halves (stage, then commit),
// as the runtime path uses them while haproxy takes its commands.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { linkDurable, stageFiles, writeFileAtomic, writeFilesAtomic } from '../../agent/system/files.js';

const scratch = () => mkdtempSync(join(tmpdir(), 'aat-files-'));

test('staged files stay invisible until commit, then all land with their mode', async () => {
  const dir = scratch();
  try {
    writeFileSync(join(dir, 'haproxy.cfg'), 'old');
    const staged = await stageFiles(
      [
        { path: [join(dir, 'haproxy.cfg'), join(dir, 'live.cfg')], data: 'new' },
        { path: join(dir, 'spec.json'), data: '{}' },
      ],
      0o640,
    );
    assert.is(readFileSync(join(dir, 'haproxy.cfg'), 'utf8'), 'old');
    assert.equal(
      readdirSync(dir).filter((n) => !n.startsWith('.')),
      ['haproxy.cfg'],
    );
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

test('a failed write rejects and leaves no temporary files', async () => {
  const dir = scratch();
  try {
    // The second file's temporary name is longer than a file name may be:
    // staging fails after the first temporary file exists.
    await writeFilesAtomic([
      { path: join(dir, 'a'), data: 'x' },
      { path: join(dir, 'b'.repeat(240)), data: 'y' },
    ]).then(
      () => assert.unreachable('should reject'),
      (err: Error) => assert.match(err.message, /ENAMETOOLONG/),
    );
    assert.equal(readdirSync(dir), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('files of two directories land together', async () => {
  const dir = scratch();
  try {
    mkdirSync(join(dir, 'sub'));
    await writeFilesAtomic([
      { path: join(dir, 'a'), data: 'x' },
      { path: join(dir, 'sub', 'b'), data: 'y' },
    ]);
    assert.equal(readdirSync(dir).sort(), ['a', 'sub']);
    assert.equal(readdirSync(join(dir, 'sub')), ['b']);
    assert.is(readFileSync(join(dir, 'sub', 'b'), 'utf8'), 'y');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a linked copy keeps the old content when the file is replaced, and replaces an earlier copy', async () => {
  const dir = scratch();
  const [live, previous] = [join(dir, 'live.cfg'), join(dir, 'live.cfg.prev')];
  try {
    await writeFileAtomic(live, 'one');
    await linkDurable(live, previous);
    await linkDurable(live, previous); // already a link of the same file
    await writeFileAtomic(live, 'two');
    assert.is(readFileSync(previous, 'utf8'), 'one');
    await linkDurable(live, previous);
    assert.is(readFileSync(previous, 'utf8'), 'two');
    assert.equal(readdirSync(dir).sort(), ['live.cfg', 'live.cfg.prev']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
