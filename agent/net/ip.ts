// IP address helpers for the plug and interface routes (pure).
import { isIP } from 'node:net';

/** IPv6 in Octavia's "exploded" form (8 groups of 4 hex digits); IPv4 unchanged. */
export function explode(ip: string): string {
  if (isIP(ip) !== 6) return ip;
  let [head, tail] = ip.toLowerCase().split('::') as [string, string | undefined];
  // An embedded IPv4 tail (::ffff:1.2.3.4) becomes two groups.
  const v4 = (s: string) => s.replace(/(\d+)\.(\d+)\.(\d+)\.(\d+)$/, (_m, a, b, c, d) => `${((+a << 8) | +b).toString(16)}:${((+c << 8) | +d).toString(16)}`);
  head = v4(head);
  if (tail !== undefined) tail = v4(tail);
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  return groups.map((g) => g.padStart(4, '0')).join(':');
}

export interface Cidr {
  address: string;
  prefix: number;
  family: 4 | 6;
}

export function parseCidr(text: string): Cidr {
  const [address, len, extra] = String(text).split('/');
  const family = isIP(address ?? '');
  const prefix = Number(len);
  if (!family || extra !== undefined || len === undefined || !/^\d+$/.test(len) || prefix > (family === 4 ? 32 : 128)) {
    throw new Error(`'${text}' does not appear to be an IPv4 or IPv6 network`);
  }
  return { address: address!, prefix, family: family as 4 | 6 };
}

/**
 * An IPv4 or IPv6 address written with its digits only: node's isIP also
 * takes an IPv6 zone id ('fe80::1%eth0', '::1%example.com'), which haproxy
 * reads as a name to resolve on a server line and keepalived as an
 * interface. Config policies take addresses through this.
 */
export function isPlainIp(text: string): boolean {
  return /^[0-9A-Fa-f.:]+$/.test(text) && isIP(text) !== 0;
}

export function ipFamily(ip: string): 4 | 6 | 0 {
  return isIP(ip) as 4 | 6 | 0;
}

/** Whether two textual addresses are the same address. */
export function sameIp(a: string, b: string): boolean {
  return ipFamily(a) !== 0 && ipFamily(a) === ipFamily(b) && explode(a) === explode(b);
}
