// The one place the agent writes files. Writes are atomic (temp file, fsync,
// rename, fsync of the directory) so a crash leaves either the old or the new
// content on disk, never a torn file.
import { open, rename, rm, readFile, mkdir, stat } from 'node:fs/promises';
import { dirname, basename, join } from 'node:path';
import { randomBytes } from 'node:crypto';

export async function writeFileAtomic(path: string, data: string | Buffer, mode = 0o600): Promise<void> {
  const dir = dirname(path);
  const tmp = join(dir, `.${basename(path)}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
  const fh = await open(tmp, 'w', mode);
  try {
    await fh.writeFile(data);
    await fh.chmod(mode);
    await fh.sync();
  } finally {
    await fh.close();
  }
  try {
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
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
