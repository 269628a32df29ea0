// An API 2.0 member call as an edit of the accepted config: the member's
// server lines, rendered from the template on their own (render.ts
// renderMemberLines), put in place of the old ones in every backend of its
// pool. The result is the config a whole render of the new spec gives (a
// unit test holds the two together), at a cost that does not grow with the
// load balancer. Pure.
import type { EditedConfig } from '../haproxy/config/edited-config.js';
import type { MemberEdit } from '../haproxy/apply/pipeline.js';
import type { MemberLines } from '../haproxy/apply/plan.js';
import type { MemberSpec } from '../model/spec/types.js';

/**
 * `base` with the member set to its new lines (`after`: backend -> line) or
 * removed from the backends `before` names (`after` null). Null when `base`
 * lacks one of those backends: the caller renders the whole spec instead.
 */
export function editMember(base: EditedConfig, memberId: string, backends: string[], after: Map<string, string> | null): MemberEdit | null {
  let edited = base;
  const lines: MemberLines[] = [];
  for (const backend of backends) {
    if (!base.hasBackend(backend)) return null;
    const line = after?.get(backend) ?? null;
    lines.push({ backend, before: edited.serverLine(backend, memberId), after: line });
    edited = edited.withServerLine(backend, memberId, line);
  }
  return { base, edited, lines };
}

/** Whether two member specs say the same (defaults filled in). */
export function sameMember(a: MemberSpec | undefined, b: MemberSpec | null): boolean {
  if (a === undefined || b === null) return a === undefined && b === null;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k as keyof MemberSpec] === b[k as keyof MemberSpec]);
}
