// How a new config becomes the accepted one: validated the way Octavia
// validates it (haproxy -c with the amphora's peer name and the user/group
// file), then renamed into place with the amphora it was accepted for.
// haproxy judges the text it would load (runnable.ts); the accepted file
// keeps the text as sent. A rejected config is kept beside it for operators.
import { run } from '../../system/exec.js';
import { ensureDir, exists, readTextIfExists, removeFile, renameDurable, writeFileAtomic } from '../../system/files.js';
import { haproxyEnvironment } from '../process/environment.js';
import { InvalidConfigError } from '../errors.js';
import type { LoadBalancerFiles } from '../layout.js';
import { peerName } from '../../model/names.js';

export interface AcceptanceDeps {
  haproxyCommand: string[];
  /** Octavia's haproxy-default-user-group.conf; created with group nogroup when it is missing and `ownDir` holds it. */
  userGroupFile: string;
  ownDir: string;
}

/**
 * Throws InvalidConfigError with haproxy's message when haproxy -c refuses the
 * config. `meanwhile` runs while haproxy -c does, on the agent's own core: at
 * 10,000 members the check takes most of a second.
 */
export async function acceptConfig(
  deps: AcceptanceDeps,
  files: LoadBalancerFiles,
  amphoraId: string,
  text: string,
  runnable: string,
  meanwhile?: () => void,
): Promise<void> {
  await ensureUserGroupFile(deps);
  await ensureDir(files.dir, 0o755);
  await writeFileAtomic(files.candidate, text, 0o600);
  if (runnable !== text) await writeFileAtomic(files.candidateLive, runnable, 0o600);
  const check = [
    ...deps.haproxyCommand,
    '-c',
    '-L',
    peerName(amphoraId),
    '-f',
    runnable !== text ? files.candidateLive : files.candidate,
    '-f',
    deps.userGroupFile,
  ];
  // Quiet (-q): haproxy -c applies the server-state file too, and prints a
  // warning for every member it holds DOWN (2 MB at 10,000 members) that
  // nobody reads. A refused config is checked again aloud for haproxy's message.
  const checking = run([...check, '-q'], { env: haproxyEnvironment() });
  meanwhile?.();
  let res = await checking;
  if (res.exitCode !== 0) res = await run(check, { env: haproxyEnvironment() });
  if (runnable !== text) await removeFile(files.candidateLive);
  if (res.exitCode !== 0) {
    await renameDurable(files.candidate, files.rejected);
    throw new InvalidConfigError(res.output.trim());
  }
  await renameDurable(files.candidate, files.config);
  // Written when it changes (an fsync saved on every other upload).
  const meta = JSON.stringify({ amphoraId });
  if ((await readTextIfExists(files.meta)) !== meta) await writeFileAtomic(files.meta, meta, 0o600);
}

async function ensureUserGroupFile(deps: AcceptanceDeps): Promise<void> {
  if (!(await exists(deps.userGroupFile)) && deps.userGroupFile.startsWith(`${deps.ownDir}/`)) {
    await writeFileAtomic(deps.userGroupFile, 'global\n    group nogroup\n', 0o644);
  }
}
