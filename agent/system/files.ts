// The one place the agent writes files. Writes are atomic (temp file, fsync,
// rename, fsync of the directory) so a crash leaves either the old or the new
// content on disk, never a torn file.
import { link, open, rename, rm, readFile, mkdir, stat } from 'node:fs/promises';
import { dirname, basename, join } from 'node:path';
import { randomBytes } from 'node:crypto';

/**
 * Write `data` to `path`, or to several paths of one directory at once (hard
 * links of one synced temp file: one data fsync and one directory fsync for
 * all of them).
 */
export async function writeFileAtomic(path: string | string[], data: string | Buffer, mode = 0o600): Promise<void> {
  const paths = Array.isArray(path) ? path : [path];
  const dir = dirname(paths[0]!);
  if (paths.some((p) => dirname(p) !== dir)) throw new Error('writeFileAtomic: all paths must share one directory');
  const temp = (p: string) => join(dir, `.${basename(p)}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
  const tmps = paths.map(temp);
  const fh = await open(tmps[0]!, 'w', mode);
  try {
    await fh.writeFile(data);
    await fh.chmod(mode);
    await fh.sync();
  } finally {
    await fh.close();
  }
  try {
    for (const t of tmps.slice(1)) await link(tmps[0]!, t);
    for (let i = 0; i < paths.length; i++) await rename(tmps[i]!, paths[i]!);
  } catch (err) {
    await Promise.all(tmps.map((t) => rm(t, { force: true })));
    throw err;
  }
  await syncDir(dir);
}

/** Rename with a directory fsync, so the rename survives a power cut. */
export async function renameDurable(from: string, to: string): Promise<void> {
  await rename(from, to);
  await syncDir(dirname(to));
}

async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

export async function readTextIfExists(path: string): Promise<string | null> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

export async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

export async function ensureDir(path: string, mode = 0o755): Promise<void> {
  await mkdir(path, { recursive: true, mode });
}

export async function removeFile(path: string): Promise<void> {
  await rm(path, { force: true });
}

export async function removeTree(path: string): Promise<void> {
  await rm(path, { recursive: true, force: true });
}
