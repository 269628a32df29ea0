// The installed versions of Debian packages, for /1.0/info and /1.0/details.
import { run } from '../system/exec.js';

/**
 * Installed versions of Debian packages ('' for one that is not installed),
 * with one dpkg-query for all: it prints the packages it knows and exits 1
 * when one is unknown.
 */
export async function packageVersions<K extends string>(pkgs: K[]): Promise<Record<K, string>> {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's own format syntax
  const res = await run(['dpkg-query', '-W', '-f=${Package}\t${db:Status-Abbrev}\t${Version}\n', ...pkgs]);
  const found = new Map<string, string>();
  for (const line of res.stdout.split('\n')) {
    const [name, status, version] = line.split('\t');
    // "ii " is installed; a removed package whose config files remain is still listed ("rc ").
    if (name && status?.startsWith('ii') && version) found.set(name.replace(/:.*$/, ''), version);
  }
  return Object.fromEntries(pkgs.map((p) => [p, found.get(p) ?? ''])) as Record<K, string>;
}
