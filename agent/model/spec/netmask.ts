// Netmasks as keepalived's persistence_granularity needs them: an IPv4 mask
// stays dotted, an IPv6 mask becomes its prefix length. Pure.
import { isIPv4, isIPv6 } from 'node:net';

/** The 16-bit groups of an IPv6 address (with an embedded IPv4 tail resolved). */
function ipv6Groups(address: string): number[] {
  let text = address;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const b = v4[1]!.split('.').map(Number);
    text = `${text.slice(0, v4.index)}${((b[0]! << 8) | b[1]!).toString(16)}:${((b[2]! << 8) | b[3]!).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const part = (s: string | undefined) => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
  const h = part(head);
  const t = part(tail);
  return tail === undefined ? h : [...h, ...Array<number>(8 - h.length - t.length).fill(0), ...t];
}

/** The number of leading one bits of a netmask, or null when its ones are not contiguous (or it is no address). */
export function prefixLength(mask: string): number | null {
  let words: number[];
  let width: number;
  if (isIPv4(mask)) {
    words = mask.split('.').map(Number);
    width = 8;
  } else if (isIPv6(mask)) {
    words = ipv6Groups(mask);
    width = 16;
  } else {
    return null;
  }
  const bits = words.map((w) => w.toString(2).padStart(width, '0')).join('');
  const ones = bits.indexOf('0') === -1 ? bits.length : bits.indexOf('0');
  return bits.slice(ones).includes('1') ? null : ones;
}

/**
 * persistence_granularity for a virtual server of one IP family. A spec's
 * netmask speaks of clients of its own family; the other family keeps
 * per-address persistence (keepalived drops the real servers of a virtual
 * server whose granularity is of the wrong family).
 */
export function granularityFor(mask: string | undefined, ipVersion: 4 | 6): string {
  const maskVersion = mask === undefined ? null : isIPv6(mask) ? 6 : 4;
  if (maskVersion !== ipVersion) return ipVersion === 4 ? '255.255.255.255' : '128';
  return ipVersion === 4 ? mask! : String(prefixLength(mask!));
}
