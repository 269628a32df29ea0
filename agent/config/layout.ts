// Paths derived from amphora-agent.conf options, joined here and nowhere else.
// Pure.
import { join } from 'node:path';

/** A load balancer's certificates (PEM files, crt-lists): <base_cert_dir>/<lb_id>, as Octavia keeps them. */
export function certificateDir(baseCertDir: string, lbId: string): string {
  return join(baseCertDir, lbId);
}
