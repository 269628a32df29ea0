// What an uploaded haproxy config may not do, whatever haproxy -c thinks of it.
//
// API 1.0 takes raw configs rendered by the controller. When the controller
// lets tenant values carry newlines into the text (OSSA-2026-039: TLS
// ciphers, L7 redirect URLs, L7 rule values in Octavia before the fix), a
// tenant can add any directive to its amphora's haproxy, which runs as root
// until it drops to `user`. This policy refuses what no Octavia template
// renders and a tenant must never get:
//  - running programs: `program` sections, `lua-*`, `external-check command`
//    other than Octavia's PING wrapper, `insecure-fork-wanted` without it;
//  - reading files outside the load balancer's own directories (error pages,
//    `return ... file`, ACL pattern files, maps, certificates, server state),
//    so the amphora's key and the agent's files cannot be served;
//  - opening the runtime API or the master to the network: stats sockets
//    that are not this load balancer's unix socket under base_path, `level
//    admin`, the stats page's admin mode, servers and binds on unix sockets;
//  - workers as root, chroot, log targets other than the amphora's local
//    syslog socket, environment changes and expansion, engines and providers
//    that load code.
// Pure: text and the load balancer's directories in, the violations out
// (1-based line numbers). Words are read as haproxy reads them
// (config-reader.ts tokenizeLine: quotes, escapes, comments).
import { posix } from 'node:path';
import type { FileReference, PolicyContext, PolicyViolation } from './types.js';
import { tokenizeLine } from '../config-reader.js';

/** The PING health check's program, as Octavia's templates (11 to 19) name it. */
export const OCTAVIA_PING_WRAPPER = '/var/lib/octavia/ping-wrapper.sh';

/** The syslog sockets Octavia's templates (11 to 19) send haproxy's logs to. */
export const LOCAL_LOG_TARGETS = ['/run/rsyslog/octavia/log', '/dev/log'];

/** Sections that run programs or fetch and write files on their own. */
const REFUSED_SECTIONS = new Map([
  ['program', 'runs a program'],
  ['crt-store', 'loads certificate files outside the load balancer certificate directory'],
  ['acme', 'writes key and certificate files'],
]);

/** Section keywords: `user root` is a worker's identity in global, a login name in a userlist. */
const SECTIONS = new Set([
  'global', 'defaults', 'frontend', 'backend', 'listen', 'peers', 'userlist', 'resolvers', 'mailers', 'program',
  'http-errors', 'ring', 'cache', 'crt-store', 'traces', 'log-forward', 'fcgi-app', 'dynamic-update', 'acme',
]);

/** Directives refused wherever they appear. */
const REFUSED = new Map([
  ['chroot', 'changes the root directory'],
  ['setenv', 'changes the environment'],
  ['presetenv', 'changes the environment'],
  ['setcap', 'keeps capabilities in the workers'],
  ['insecure-setuid-wanted', 'allows setuid programs'],
  ['set-dumpable', 'makes workers dump their memory'],
  ['unix-bind', 'changes where unix sockets are created'],
  ['default-path', 'changes what relative paths mean'],
  ['crt-base', 'reads certificates from another directory'],
  ['ca-base', 'reads CAs from another directory'],
  ['key-base', 'reads keys from another directory'],
  ['server-state-base', 'reads server state from another directory'],
  ['ssl-dh-param-file', 'reads a file outside the load balancer directories'],
  ['issuers-chain-path', 'reads files outside the load balancer directories'],
  ['httpclient.ssl.ca-file', 'reads a file outside the load balancer directories'],
  ['h1-case-adjust-file', 'reads a file outside the load balancer directories'],
  ['ssl-engine', 'loads an OpenSSL engine (code)'],
  ['ssl-provider', 'loads an OpenSSL provider (code)'],
  ['ssl-provider-path', 'loads OpenSSL providers (code)'],
  ['backing-file', 'writes a file'],
]);
const REFUSED_PREFIXES: [string, string][] = [
  ['lua-', 'runs Lua code'],
  ['tune.lua.', 'tunes Lua code'],
  ['51degrees-', 'reads a device database file'],
  ['wurfl-', 'reads a device database file'],
  ['deviceatlas-', 'reads a device database file'],
];

/** Keywords of bind/server lines whose next word is a certificate, key, CA or CRL file. */
const CERT_FILE_OPTIONS = new Set(['crt', 'crt-list', 'ca-file', 'crl-file', 'ca-verify-file', 'ca-sign-file', 'key', 'ocsp', 'issuer', 'sctl']);
/**
 * A member's server line that nothing below refuses, told by one regex test
 * instead of a tokenized read (most of a 10,000-member config, and most of
 * the policy's time): plain words only, no quote, escape, comment, `$`, `(`,
 * `/` or `@`, an address of hex digits, dots, colons and brackets, and no
 * word that names a file (CERT_FILE_OPTIONS, `-f`) or starts external checks.
 * Anything else takes the full read.
 */
export const PLAIN_SERVER_LINE = new RegExp(
  `^[ \\t]+server[ \\t]+[\\w.:-]+[ \\t]+[0-9A-Fa-f.:\\[\\]]+` +
  `(?:[ \\t]+(?!(?:${[...CERT_FILE_OPTIONS, '-f', 'external-check'].join('|')})(?:[ \\t]|$))[\\w.:%-]+)*[ \\t]*$`,
);

/** Keywords of return/deny/tarpit/http-error actions whose next word is a file served as the response. */
const RESPONSE_FILE_OPTIONS = new Set(['errorfile', 'file', 'lf-file']);
/** Filters that read no configuration file and talk to no agent. */
const ALLOWED_FILTERS = new Set(['compression', 'cache', 'bwlim-in', 'bwlim-out', 'trace']);
/** Address prefixes that are not an IP address (unix, abstract, inherited sockets). */
const NON_IP_ADDRESS = /^(unix|abns|abnsz|fd|sockpair|uxst|uxdg)@|^\//i;
/** Converters and actions that name a map or ACL file: map(file), map_str(file), set-map(file)... */
const FILE_REFERENCE = /(?:^|[^\w.-])((?:map(?:_\w+)?|set-map|del-map|add-acl|del-acl))\(([^,)]*)/g;

const stripSlash = (d: string) => posix.normalize(d).replace(/\/+$/, '');

/** `path` is an absolute path inside one of `dirs` (after resolving `.` and `..`). */
export function insideDirs(path: string, dirs: string[]): boolean {
  if (!path.startsWith('/') || path.includes('\0')) return false;
  const p = posix.normalize(path);
  return dirs.some((d) => p.startsWith(`${stripSlash(d)}/`));
}

/**
 * haproxy expands "$VAR" and "${VAR}" inside double quotes: a word the
 * policy reads as text could be a path or a keyword once expanded.
 */
function expandsEnvironment(line: string): boolean {
  let squote = false;
  let dquote = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (squote) {
      if (c === "'") squote = false;
    } else if (c === '\\') {
      i++;
    } else if (c === '#' && !dquote) {
      return false;
    } else if (c === '"') {
      dquote = !dquote;
    } else if (c === "'" && !dquote) {
      squote = true;
    } else if (c === '$' && dquote && /[A-Za-z_{]/.test(line[i + 1] ?? '')) {
      return true;
    }
  }
  return false;
}

/** The violations of a config's words. */
export function checkConfigPolicy(text: string, ctx: PolicyContext): PolicyViolation[] {
  return readConfigPolicy(text, ctx).violations;
}

/** The violations of a config's words, and the files it names (for files.ts). */
export function readConfigPolicy(text: string, ctx: PolicyContext): { violations: PolicyViolation[]; files: FileReference[] } {
  const out: PolicyViolation[] = [];
  const files: FileReference[] = [];
  const lbDir = posix.join(ctx.basePath, ctx.lbId);
  const certDir = posix.join(ctx.baseCertDir, ctx.lbId);
  const ownDirs = [lbDir, certDir];
  const protectedFiles = new Set(ctx.protectedFiles.map((f) => posix.normalize(f)));
  const pingWrapper = posix.join(ctx.basePath, 'ping-wrapper.sh');
  // Octavia's template names the wrapper by this fixed path, whatever base_path is.
  const pingWrappers = [pingWrapper, OCTAVIA_PING_WRAPPER];
  const ownSocket = posix.join(ctx.basePath, `${ctx.lbId}.sock`);
  const masterSocket = posix.join(lbDir, 'master.sock');
  let pingCommand = false; // external checks (only Octavia's PING wrapper) are configured
  const forkLines: number[] = [];
  let section = '';

  let line = 0; // the line being read, 1-based
  const refuse = (directive: string, reason: string) => out.push({ line, directive, reason });
  const fileIn = (directive: string, path: string | undefined, dirs: string[], where: string, kind: FileReference['kind']) => {
    if (path === undefined) return; // haproxy -c refuses the missing argument
    if (path === '@system-ca' && directive.endsWith('ca-file')) return; // the system's CA bundle
    if (!insideDirs(path, dirs) || protectedFiles.has(posix.normalize(path))) {
      refuse(directive, `reads ${JSON.stringify(path)}, outside ${where}`);
    } else {
      files.push({ line, directive, path, kind });
    }
  };
  const inLbDirs = (directive: string, path: string | undefined) =>
    fileIn(directive, path, ownDirs, `the load balancer's directories (${lbDir}/, ${certDir}/)`, 'file');
  const inCertDir = (directive: string, path: string | undefined) =>
    fileIn(directive, path, [certDir], `the load balancer's certificate directory (${certDir}/)`, directive.endsWith('crt-list') ? 'crt-list' : 'certificate');

  for (const raw of text.split('\n')) {
    line++;
    if (PLAIN_SERVER_LINE.test(raw)) continue;
    const { words, unreadable } = tokenizeLine(raw);
    if (unreadable) {
      refuse(words[0] ?? '', unreadable);
      continue;
    }
    if (words.length === 0) continue;
    const kw = words[0]!;

    if (raw.includes('$') && expandsEnvironment(raw)) refuse(kw, 'expands an environment variable ("$NAME" in double quotes)');

    const lower = kw.toLowerCase();
    if (SECTIONS.has(lower)) section = lower;
    const inGlobal = section === 'global' || section === '';
    // Octavia 16 renders the global `external-check` on the cpu-map line (fixed upstream in 8c0248ad0).
    if (words.includes('external-check') && lower !== 'external-check') pingCommand = true;
    const sectionWhy = REFUSED_SECTIONS.get(lower);
    if (sectionWhy) refuse(`${lower} section`, sectionWhy);
    const refusedWhy = REFUSED.get(lower) ?? REFUSED_PREFIXES.find(([p]) => lower.startsWith(p))?.[1];
    if (refusedWhy) refuse(kw, refusedWhy);

    switch (lower) {
      case 'external-check':
        if (words[1] === 'command') {
          if (pingWrappers.includes(words[2] ?? '') && words.length === 3) pingCommand = true;
          else refuse('external-check command', `runs ${JSON.stringify(words.slice(2).join(' '))}; only Octavia's ${pingWrapper} may run`);
        } else if (words.length > 1) {
          refuse(`external-check ${words[1]}`, 'changes how health-check programs run');
        } else {
          pingCommand = true; // global `external-check`: Octavia renders it with insecure-fork-wanted, even when no pool runs a check
        }
        break;
      case 'insecure-fork-wanted':
        forkLines.push(line);
        break;
      case 'user':
        if (inGlobal && words[1] === 'root') refuse('user', 'runs the workers as root');
        break;
      case 'uid':
      case 'gid':
        if (inGlobal && words[1] !== undefined && /^\s*0*\s*$/.test(words[1])) refuse(lower, `runs the workers as ${lower === 'uid' ? 'root' : 'the root group'}`);
        break;
      case 'group':
        if (inGlobal && words[1] === 'root') refuse('group', 'runs the workers in the root group');
        break;
      case 'pidfile':
        inLbDirs('pidfile', words[1]);
        break;
      case 'errorfile':
        inLbDirs('errorfile', words[2]);
        break;
      case 'server-state-file':
        inLbDirs('server-state-file', words[1]);
        break;
      case 'log':
        if (words[1] !== 'global' && !LOCAL_LOG_TARGETS.includes((words[1] ?? '').replace(/^unix@/, ''))) {
          refuse('log', `sends logs to ${JSON.stringify(words[1] ?? '')}; only the amphora's syslog socket (${LOCAL_LOG_TARGETS.join(', ')}) may be used`);
        }
        break;
      case 'stats':
        if (words[1] === 'socket') {
          const addr = (words[2] ?? '').replace(/^unix@/, '');
          const ok = addr === ownSocket || (insideDirs(addr, [lbDir]) && posix.normalize(addr) !== masterSocket && addr.endsWith('.sock'));
          if (!ok) refuse('stats socket', `listens on ${JSON.stringify(words[2] ?? '')}; only ${ownSocket} or a .sock file in ${lbDir}/ may be used`);
          for (const [j, w] of words.entries()) {
            if (w === 'level' && words[j + 1] === 'admin') refuse('stats socket', 'level admin opens the runtime API to anyone who reaches the socket');
            if (w === 'expose-fd') refuse('stats socket', 'expose-fd hands out the listening sockets');
          }
        } else if (words[1] === 'admin') {
          refuse('stats admin', "opens the stats page's admin actions to the tenant network");
        }
        break;
      case 'bind':
      case 'dgram-bind':
        for (const a of (words[1] ?? '').split(',')) {
          if (NON_IP_ADDRESS.test(a)) refuse(lower, `binds ${JSON.stringify(a)}, not an IP address`);
        }
        for (let j = 2; j < words.length; j++) if (CERT_FILE_OPTIONS.has(words[j]!)) inCertDir(`bind ${words[j]}`, words[j + 1]);
        break;
      case 'server':
      case 'peer':
      case 'nameserver':
      case 'mailer':
      case 'default-server':
      case 'server-template': {
        const addr = lower === 'server-template' ? words[3] : lower === 'default-server' ? undefined : words[2];
        if (addr !== undefined && NON_IP_ADDRESS.test(addr)) refuse(lower, `connects to ${JSON.stringify(addr)}, not an IP address`);
        for (let j = 2; j < words.length; j++) if (CERT_FILE_OPTIONS.has(words[j]!)) inCertDir(`${lower} ${words[j]}`, words[j + 1]);
        break;
      }
      case 'filter':
        if (!ALLOWED_FILTERS.has(words[1] ?? '')) refuse(`filter ${words[1] ?? ''}`, 'reads a configuration file or talks to an external agent');
        break;
      case 'http-error':
      case 'http-request':
      case 'http-response':
      case 'http-after-response':
        if (lower === 'http-error' || ['return', 'deny', 'tarpit'].includes(words[1] ?? '')) {
          for (let j = 1; j < words.length && words[j] !== 'if' && words[j] !== 'unless'; j++) {
            if (RESPONSE_FILE_OPTIONS.has(words[j]!)) inLbDirs(`${lower} ${words[1]} ${words[j]}`, words[j + 1]);
          }
        }
        break;
    }

    // ACL pattern files (-f) and map/ACL files named by converters and actions, on any line.
    for (let j = 0; j < words.length; j++) {
      const w = words[j]!;
      if (w === '-f' && j > 0) inLbDirs(`${kw} -f`, words[j + 1]);
      if (w.includes('(')) for (const m of w.matchAll(FILE_REFERENCE)) inLbDirs(`${kw} ${m[1]}()`, m[2]);
    }
  }
  // Forking is for Octavia's PING check: the only external-check command allowed above.
  if (!pingCommand) {
    for (const line of forkLines) out.push({ line, directive: 'insecure-fork-wanted', reason: `lets workers fork without Octavia's external PING check (${pingWrapper})` });
  }
  return { violations: out.sort((a, b) => a.line - b.line), files };
}
