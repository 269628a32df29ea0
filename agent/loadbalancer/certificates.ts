// A load balancer's certificate files (PEM: certificate with key, CA, CRL),
// in <base_cert_dir>/<lb_id>/ as Octavia keeps them; both APIs store them
// here. Names are checked by the API (api/params.ts) before they get here.
import { join } from 'node:path';
import type { AgentConfig } from '../config/agent-config.js';
import { certificateDir as certificateDirOf } from '../config/layout.js';
import { ensureDir, readTextIfExists, removeFile, removeTree, writeFileAtomic } from '../system/files.js';

export function certificateDir(config: AgentConfig, lbId: string): string {
  return certificateDirOf(config.haproxyAmphora.baseCertDir, lbId);
}

export async function storeCertificate(config: AgentConfig, lbId: string, name: string, pem: Buffer): Promise<void> {
  const dir = certificateDir(config, lbId);
  await ensureDir(dir, 0o700);
  await writeFileAtomic(join(dir, name), pem, 0o600);
}

/** The file's text, or null when there is none. */
export function readCertificate(config: AgentConfig, lbId: string, name: string): Promise<string | null> {
  return readTextIfExists(join(certificateDir(config, lbId), name));
}

export function removeCertificate(config: AgentConfig, lbId: string, name: string): Promise<void> {
  return removeFile(join(certificateDir(config, lbId), name));
}

export function removeCertificates(config: AgentConfig, lbId: string): Promise<void> {
  return removeTree(certificateDir(config, lbId));
}
