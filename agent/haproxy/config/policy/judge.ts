// One verdict on an uploaded haproxy config: its words (haproxy-config.ts),
// what it reserves at start (bounds.ts), then the files it names (files.ts).
// The only place that runs the policies in order; callers get the violations
// sorted by line, empty when the config may run.
import { checkBounds } from './bounds.js';
import { checkFiles } from './files.js';
import { readConfigPolicy } from './haproxy-config.js';
import type { PolicyContext, PolicyViolation } from './types.js';

export async function judgeHaproxyConfig(text: string, ctx: PolicyContext): Promise<PolicyViolation[]> {
  const { violations, files } = readConfigPolicy(text, ctx);
  violations.push(...checkBounds(text, ctx));
  // Files are only looked at once the words are known to be allowed.
  if (violations.length === 0) violations.push(...(await checkFiles(files, ctx)));
  return violations.sort((a, b) => a.line - b.line);
}
