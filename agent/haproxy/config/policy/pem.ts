// What a certificate file may hold: PEM blocks of certificates, private keys
// and CRLs, each one DER structure, and printable text between them. Text
// around the blocks is what `openssl x509 -text` and CA bundles carry, and
// Octavia's API takes client CAs and CRLs with it (cryptography reads past
// it), so refusing it would put such a tenant's listener in ERROR. It cannot
// smuggle anything: haproxy and OpenSSL skip it when they read certificates,
// and a file named as a crt-list is read line by line (crt-list.ts) whatever
// it holds. What is refused: no block at all (a path, a word), binary bytes,
// a block that is not base64 of one DER structure, labels outside the list.
// Octavia's controller sends certificate, key and intermediates (build_pem in
// octavia/common/tls_utils/cert_parser.py, 11 to 19), client CAs and CRLs as
// stored in Barbican. Pure: bytes in, the labels found or the reason out.
/** The PEM labels a load balancer's certificate files may hold. */
const LABELS = new Set([
  'CERTIFICATE',
  'X509 CRL',
  'PRIVATE KEY',
  // Octavia re-serializes keys in OpenSSL's traditional format (prepare_private_key).
  'RSA PRIVATE KEY',
  'EC PRIVATE KEY',
]);

const BEGIN = /^-----BEGIN ([A-Z0-9 ]+)-----$/;
const END = /^-----END ([A-Z0-9 ]+)-----$/;
const BASE64_LINE = /^[A-Za-z0-9+/]+={0,2}$/;

export type PemRead = { ok: true; labels: string[] } | { ok: false; reason: string };

/** Reads `data` as a PEM file of certificates, keys and CRLs: each block one DER structure, printable text between them. */
export function readPem(data: Buffer): PemRead {
  const bad = data.findIndex((b) => !(b === 0x09 || b === 0x0a || b === 0x0d || (b >= 0x20 && b < 0x7f)));
  if (bad >= 0) return { ok: false, reason: `holds binary data (byte 0x${data[bad]!.toString(16).padStart(2, '0')} at offset ${bad}), not PEM text` };
  const lines = data.toString('latin1').split('\n');
  if (lines.at(-1) === '') lines.pop(); // what follows the last newline
  const labels: string[] = [];
  let open: { label: string; line: number; body: string[] } | null = null;
  for (const [i, raw] of lines.entries()) {
    const text = raw.replace(/[ \t\r]+$/, '');
    const n = i + 1;
    if (open === null) {
      const begin = BEGIN.exec(text);
      if (!begin) continue; // text between blocks
      if (!LABELS.has(begin[1]!)) {
        return { ok: false, reason: `line ${n}: a ${JSON.stringify(begin[1])} block; only ${[...LABELS].join(', ')} blocks are accepted` };
      }
      open = { label: begin[1]!, line: n, body: [] };
      continue;
    }
    const end = END.exec(text);
    if (end) {
      if (end[1] !== open.label) return { ok: false, reason: `line ${n} ends a ${end[1]} block that line ${open.line} began as ${open.label}` };
      const why = blockProblem(open.body.join(''));
      if (why) return { ok: false, reason: `the ${open.label} block of line ${open.line} ${why}` };
      labels.push(open.label);
      open = null;
    } else if (BASE64_LINE.test(text)) {
      open.body.push(text);
    } else {
      return { ok: false, reason: `line ${n} inside the ${open.label} block of line ${open.line} is not base64: ${JSON.stringify(clip(text))}` };
    }
  }
  if (open !== null) return { ok: false, reason: `the ${open.label} block of line ${open.line} never ends` };
  if (labels.length === 0) return { ok: false, reason: 'holds no PEM block (certificate, private key or CRL)' };
  return { ok: true, labels };
}

/**
 * Why a block's base64 is not one DER structure, or null. Only the outer
 * SEQUENCE and its length are read (microseconds, where OpenSSL's full parse
 * took over a millisecond a block): haproxy -c parses what passes here, and
 * what this check is for is that nothing but PEM can hide in the file.
 */
function blockProblem(base64: string): string | null {
  const der = Buffer.from(base64, 'base64');
  if (der.length < 2 || der[0] !== 0x30) return 'does not hold a DER structure';
  const first = der[1]!;
  const lengthBytes = first < 0x80 ? 0 : first - 0x80;
  if (lengthBytes > 4) return 'does not hold a DER structure';
  let length = first < 0x80 ? first : 0;
  for (let i = 0; i < lengthBytes; i++) length = length * 256 + (der[2 + i] ?? 0);
  const total = 2 + lengthBytes + length;
  if (total !== der.length) return `holds ${der.length} bytes where its DER structure says ${total}`;
  return null;
}

const clip = (s: string) => (s.length > 80 ? `${s.slice(0, 80)}...` : s);
