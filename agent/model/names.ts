// Names the renderer and the engine must spell alike, so neither owns them:
// the peer name the rendered peers section declares and haproxy is started
// with (-L), and the key a member goes by in reports, logs and the pending
// list. Pure.
import { createHash } from 'node:crypto';

/**
 * Octavia's -L peer name: base64 of SHA-1(amphora id) with '+' -> '_' and
 * '/' -> '-', '=' stripped, a leading '-' made 'x'. It must match the peer the
 * controller renders in the config's peers section.
 */
export function peerName(amphoraId: string): string {
  const b64 = createHash('sha1').update(amphoraId, 'utf8').digest('base64').replace(/\+/g, '_').replace(/\//g, '-').replace(/=+$/, '');
  return b64.startsWith('-') ? `x${b64.slice(1)}` : b64;
}

/** How a member is named in reports, logs and the pending list: "backend/server". */
export const memberKey = (backend: string, server: string): string => `${backend}/${server}`;
