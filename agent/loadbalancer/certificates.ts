// A load balancer's certificate files (PEM: certificate with key, CA, CRL),
// in <base_cert_dir>/<lb_id>/ as Octavia keeps them; both APIs store them
// here. Names are checked by the API (api/params.ts) before they get here;
// contents here, before anything is written: PEM blocks only, or (API 1.0)
// a crt-list in the form Octavia's controller uploads, naming only this load
// balancer's certificates. A body that is a path to another file, used as a
// crt-list, would otherwise make the VIP serve that file's key.
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { AgentConfig } from '../config/agent-config.js';
import { certificateDir } from '../config/layout.js';
import { AgentError } from '../errors.js';
import { crtListPathProblems, parseCrtList } from '../haproxy/config/policy/crt-list.js';
import { readPem } from '../haproxy/config/policy/pem.js';
import type { LoadBalancerSpec } from '../model/spec/types.js';
import { ensureDir, readTextIfExists, removeFile, removeTree, writeFileAtomic } from '../system/files.js';
import { MissingCertificateError } from './v2-errors.js';
import { certificateFiles } from './spec-store.js';

/** An uploaded certificate file that is neither PEM nor an allowed crt-list; nothing was written. */
export class InvalidCertificateFileError extends AgentError {
  readonly kind = 'invalid_input';
}

export interface UploadForm {
  /**
   * API 1.0: Octavia's controller uploads each TERMINATED_HTTPS listener's
   * crt-list through the certificate endpoint (`<listener_id>.pem`, the
   * certificates' absolute paths one a line). API 2.0 writes its crt-lists
   * itself and takes PEM only.
   */
  crtList: boolean;
}

/** Why `body` may not be stored as one of `lbId`'s certificate files, or null. */
export function certificateFileProblem(config: AgentConfig, lbId: string, body: Buffer, form: UploadForm): string | null {
  // Certificates, keys and CRLs are PEM; a crt-list is paths and holds no PEM armour.
  if (!form.crtList || body.includes('-----BEGIN')) {
    const pem = readPem(body);
    return pem.ok ? null : `not a PEM file of certificates, private keys and CRLs: ${pem.reason}`;
  }
  const bad = body.findIndex((b) => !(b === 0x09 || b === 0x0a || b === 0x0d || (b >= 0x20 && b < 0x7f)));
  if (bad >= 0) return `neither PEM nor a crt-list: byte 0x${body[bad]!.toString(16).padStart(2, '0')} at offset ${bad} is not text`;
  const { entries, problems } = parseCrtList(body.toString('latin1'));
  const agentFiles = [config.amphoraAgent.agentServerCert, config.amphoraAgent.agentServerCa];
  const all = [...problems, ...crtListPathProblems(entries, certificateDir(config.haproxyAmphora.baseCertDir, lbId), agentFiles)];
  if (all.length > 0) return `neither PEM nor a crt-list of this load balancer's certificates: ${all.map((p) => `line ${p.line}: ${p.reason}`).join('; ')}`;
  if (entries.length === 0) return 'neither PEM nor a crt-list: it names no certificate';
  return null;
}

/** Stores an uploaded certificate file; throws InvalidCertificateFileError, before writing, when it is neither PEM nor an allowed crt-list. */
export async function storeCertificate(config: AgentConfig, lbId: string, name: string, pem: Buffer, form: UploadForm = { crtList: false }): Promise<void> {
  const problem = certificateFileProblem(config, lbId, pem, form);
  if (problem !== null) throw new InvalidCertificateFileError(problem);
  const dir = certificateDir(config.haproxyAmphora.baseCertDir, lbId);
  await ensureDir(dir, 0o700);
  await writeFileAtomic(join(dir, name), pem, 0o600);
}

/** The file's text, or null when there is none. */
export function readCertificate(config: AgentConfig, lbId: string, name: string): Promise<string | null> {
  return readTextIfExists(join(certificateDir(config.haproxyAmphora.baseCertDir, lbId), name));
}

export function removeCertificate(config: AgentConfig, lbId: string, name: string): Promise<void> {
  return removeFile(join(certificateDir(config.haproxyAmphora.baseCertDir, lbId), name));
}

export function removeCertificates(config: AgentConfig, lbId: string): Promise<void> {
  return removeTree(certificateDir(config.haproxyAmphora.baseCertDir, lbId));
}

/** sha256 of each certificate file the spec names (API 2.0); a missing file is an error the caller can fix. */
export async function certificateFingerprints(config: AgentConfig, spec: LoadBalancerSpec): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of certificateFiles(spec)) {
    const pem = await readTextIfExists(join(certificateDir(config.haproxyAmphora.baseCertDir, spec.id), name));
    if (pem === null) throw new MissingCertificateError(name);
    out[name] = createHash('sha256').update(pem).digest('hex');
  }
  return out;
}

/** A crt-list API 2.0 renders, written only when it changed. */
export async function writeCrtList(config: AgentConfig, lbId: string, path: string, content: string): Promise<void> {
  await ensureDir(certificateDir(config.haproxyAmphora.baseCertDir, lbId), 0o700);
  if ((await readTextIfExists(path)) !== content) await writeFileAtomic(path, content, 0o600);
}
