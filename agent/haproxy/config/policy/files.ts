// The files a config names, checked on disk once its text passed the policy:
// confined to the load balancer's own directories after resolving links,
// certificates that are PEM, crt-lists that name only its own certificates.
// The words policy (haproxy-config.ts) already holds every path textually
// inside those directories and refuses the `*-base` directives; what is left
// is what a link, a hard link or a file's content can do. A file that does
// not exist passes: haproxy -c refuses it before anything runs.
import { lstat, readFile, readlink, realpath, stat } from 'node:fs/promises';
import { posix } from 'node:path';
import { certificateDir } from '../../../config/layout.js';
import { loadBalancerFiles } from '../../layout.js';
import { crtListPathProblems, parseCrtList } from './crt-list.js';
import { readPem } from './pem.js';
import type { FileReference, PolicyContext, PolicyViolation } from './types.js';

/** More links than this in one path is a loop (Linux's own limit, MAXSYMLINKS). */
const MAX_LINKS = 40;

/**
 * Files haproxy opens next to a certificate it loads (ssl-load-extra-files,
 * and the .rsa/.ecdsa/.dsa bundles of a missing path): a link there would
 * read another file as this certificate's key.
 */
const COMPANIONS = ['.key', '.ocsp', '.issuer', '.sctl', '.rsa', '.ecdsa', '.dsa'];

/**
 * `path` with every symbolic link in it and its parents resolved, as the
 * kernel would when haproxy opens it. Unlike realpath(3) it resolves a
 * dangling link too (haproxy writing a pidfile through one creates its
 * target); what does not exist is kept as written.
 */
export async function resolveLinks(path: string): Promise<string> {
  if (!path.startsWith('/')) throw new Error(`${JSON.stringify(path)} is not an absolute path`);
  let links = 0;
  let done = '/';
  // Not normalized first: `link/..` is the parent of the link's target, not `.`.
  const todo = path.split('/').filter((p) => p !== '');
  while (todo.length > 0) {
    const part = todo.shift()!;
    if (part === '.') continue;
    if (part === '..') {
      done = posix.dirname(done);
      continue;
    }
    const next = posix.join(done, part);
    const info = await lstat(next).catch(() => null);
    if (info === null) return posix.join(next, ...todo);
    if (!info.isSymbolicLink()) {
      done = next;
      continue;
    }
    if (++links > MAX_LINKS) throw new Error(`too many levels of symbolic links in ${path}`);
    const target = await readlink(next);
    if (target.startsWith('/')) done = '/';
    todo.unshift(...target.split('/').filter((p) => p !== ''));
  }
  return done;
}

export async function checkFiles(files: FileReference[], ctx: PolicyContext): Promise<PolicyViolation[]> {
  // The base directories may be links themselves (an operator's choice); the
  // load balancer's own directory under them may not.
  const realBase = (dir: string) => realpath(dir).catch(() => posix.normalize(dir));
  const lbDir = loadBalancerFiles(await realBase(ctx.basePath), ctx.lbId).dir;
  const certDir = certificateDir(await realBase(ctx.baseCertDir), ctx.lbId);
  const protectedFiles = new Set<string>();
  for (const f of ctx.protectedFiles) {
    protectedFiles.add(posix.normalize(f));
    protectedFiles.add(await resolveLinks(f).catch(() => posix.normalize(f)));
  }
  const out: PolicyViolation[] = [];
  for (const ref of files) {
    const dirs = ref.kind === 'file' ? [lbDir, certDir] : [certDir];
    const why = await confinementProblem(ref.path, dirs, protectedFiles);
    if (why) {
      out.push({ line: ref.line, directive: ref.directive, reason: why });
      continue;
    }
    if (ref.kind === 'file') continue;
    const content = await readRegularFile(ref.path);
    if (typeof content === 'string') {
      out.push({ line: ref.line, directive: ref.directive, reason: `${JSON.stringify(ref.path)} ${content}` });
    } else if (content !== null) {
      const problems =
        ref.kind === 'certificate'
          ? await certificateProblems(ref.path, content, certDir, protectedFiles)
          : await crtListProblems(ref.path, content, certDir, protectedFiles, ctx);
      for (const reason of problems) out.push({ line: ref.line, directive: ref.directive, reason });
    }
  }
  return out;
}

/** Why `path`, once its links are resolved, is not a file of `dirs` haproxy may open, or null. */
async function confinementProblem(path: string, dirs: string[], protectedFiles: Set<string>): Promise<string | null> {
  let real: string;
  try {
    real = await resolveLinks(path);
  } catch (err) {
    return (err as Error).message;
  }
  const where = dirs.map((d) => `${d}/`).join(', ');
  if (!dirs.some((d) => real.startsWith(`${d}/`))) return `${JSON.stringify(path)} leads to ${JSON.stringify(real)}, outside ${where}`;
  if (protectedFiles.has(real)) return `${JSON.stringify(path)} leads to ${JSON.stringify(real)}, a file of the agent`;
  // A hard link shares the file with a name elsewhere (the agent's key, /etc/shadow); the agent writes none.
  const info = await stat(real).catch(() => null);
  if (info?.isFile() && info.nlink > 1) return `${JSON.stringify(path)} has ${info.nlink} hard links; it may be a file from outside ${where}`;
  return null;
}

/** The file's bytes; null when it does not exist; the reason when it is not a regular file. */
async function readRegularFile(path: string): Promise<Buffer | string | null> {
  const info = await stat(path).catch(() => null);
  if (info === null) return null;
  if (!info.isFile()) return 'is not a regular file (a certificate, key, CRL or crt-list must be one)';
  return readFile(path);
}

/** What is wrong with a certificate file and the files haproxy opens next to it. */
async function certificateProblems(path: string, content: Buffer, certDir: string, protectedFiles: Set<string>): Promise<string[]> {
  const out: string[] = [];
  const pem = readPem(content);
  if (!pem.ok) out.push(`${JSON.stringify(path)} is not a PEM file of certificates, keys and CRLs: ${pem.reason}`);
  for (const ext of COMPANIONS) {
    const companion = `${path}${ext}`;
    if ((await lstat(companion).catch(() => null)) === null) continue;
    const why = await confinementProblem(companion, [certDir], protectedFiles);
    if (why) out.push(`next to the certificate, ${why}`);
  }
  return out;
}

/** What is wrong with a crt-list: its lines, and each file it names (confined, PEM). */
async function crtListProblems(path: string, content: Buffer, certDir: string, protectedFiles: Set<string>, ctx: PolicyContext): Promise<string[]> {
  const at = (line: number, reason: string) => `crt-list ${JSON.stringify(path)} line ${line}: ${reason}`;
  const { entries, problems } = parseCrtList(content.toString('latin1'));
  // Textually first, against the directory as configured, as the words policy checks paths.
  const textual = crtListPathProblems(entries, certificateDir(ctx.baseCertDir, ctx.lbId), ctx.protectedFiles);
  const out = [...problems, ...textual].map((p) => at(p.line, p.reason));
  if (out.length > 0) return out;
  for (const e of entries) {
    for (const file of [e.path, ...e.optionFiles.map((f) => f.path)]) {
      const why = await confinementProblem(file, [certDir], protectedFiles);
      if (why) {
        out.push(at(e.line, why));
        continue;
      }
      const named = await readRegularFile(file);
      if (typeof named === 'string') out.push(at(e.line, `${JSON.stringify(file)} ${named}`));
      else if (named !== null) out.push(...(await certificateProblems(file, named, certDir, protectedFiles)).map((r) => at(e.line, r)));
    }
  }
  return out;
}
