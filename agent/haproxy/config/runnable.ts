// A config as one haproxy binary can load it: forms that older Octavia
// controllers render and this binary refuses are translated (each form in its
// own module). The accepted text stays what the controller uploaded: GET
// returns it and the controller compares its md5. Pure.
import type { HaproxyCapabilities } from '../process/capabilities.js';
import { translateLegacyHttpchk } from './legacy-httpchk.js';
import { dropHttpUseHtx } from './legacy-htx.js';

export type LegacyFormSupport = Pick<HaproxyCapabilities, 'legacyHttpchkAccepted' | 'httpUseHtxAccepted'>;

export function runnableConfig(text: string, caps: LegacyFormSupport): string {
  const checks = caps.legacyHttpchkAccepted ? text : translateLegacyHttpchk(text);
  return caps.httpUseHtxAccepted ? checks : dropHttpUseHtx(checks);
}
