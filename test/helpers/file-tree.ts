// Every file below a directory, for tests that compare what an agent left
// on disk before and after (soak, disk-full).
import { type Dirent, readdirSync } from 'node:fs';
import { join } from 'node:path';

export interface TreeFile {
  /** Path under the root, with a leading slash. */
  rel: string;
  path: string;
  entry: Dirent;
}

/** Every entry below `root` that is not a directory (sockets included). */
export function filesUnder(root: string): TreeFile[] {
  const out: TreeFile[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else out.push({ rel: path.slice(root.length), path, entry });
    }
  };
  walk(root);
  return out;
}
