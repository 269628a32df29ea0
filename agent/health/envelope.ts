// The heartbeat envelope Octavia's health manager reads: zlib (level 9) of the
// JSON message, followed by the hex HMAC-SHA256 of the compressed bytes,
// keyed with [health_manager] heartbeat_key. Pure. The compression runs on
// libuv's thread pool: level 9 of a 5,000-member message took the API's
// event loop for tens of milliseconds at every beat.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import { deflate, inflateSync } from 'node:zlib';

const deflateAsync = promisify(deflate);

/** Octavia signs with the literal "None" when no key is configured. */
const keyBytes = (key: string | null) => Buffer.from(key ?? 'None', 'utf8');

export async function encodeHeartbeat(message: unknown, key: string | null): Promise<Buffer> {
  const payload = await deflateAsync(Buffer.from(JSON.stringify(message), 'utf8'), { level: 9 });
  const mac = createHmac('sha256', keyBytes(key)).update(payload).digest('hex');
  return Buffer.concat([payload, Buffer.from(mac, 'ascii')]);
}

/** Verify and open an envelope (for `heartbeat --print` and tests); throws on a bad HMAC. */
export function decodeHeartbeat(datagram: Buffer, key: string | null): unknown {
  const payload = datagram.subarray(0, datagram.length - 64);
  const mac = datagram.subarray(datagram.length - 64);
  const expected = Buffer.from(createHmac('sha256', keyBytes(key)).update(payload).digest('hex'), 'ascii');
  if (mac.length !== 64 || !timingSafeEqual(mac, expected)) throw new Error('heartbeat HMAC does not match');
  return JSON.parse(inflateSync(payload).toString('utf8'));
}

export interface FittedHeartbeat {
  datagram: Buffer;
  /** Pools whose member statuses were left out so the datagram fits. */
  trimmedPools: string[];
}

/**
 * Encode so the datagram fits `limit` bytes. Member ids are UUIDs, which do
 * not compress (about 22 bytes per member after zlib), so past roughly 2,900
 * members an amphora's full heartbeat cannot fit in one UDP datagram. Sending
 * nothing would get the amphora failed over; instead the member statuses of
 * the largest pools are left out (the health manager then shows those members
 * OFFLINE) while listeners and pool statuses, which drive failover and the
 * load balancer's status, stay exact. The caller logs what was left out.
 */
export async function encodeToFit<M extends { pools: Record<string, { members: Record<string, string> }> }>(
  message: M,
  key: string | null,
  limit: number,
): Promise<FittedHeartbeat> {
  let datagram = await encodeHeartbeat(message, key);
  if (datagram.length <= limit) return { datagram, trimmedPools: [] };
  const pools = structuredClone(message.pools);
  const trimmed = { ...message, pools };
  const bySize = Object.keys(pools).sort((a, b) => Object.keys(pools[b]!.members).length - Object.keys(pools[a]!.members).length);
  const trimmedPools: string[] = [];
  for (const id of bySize) {
    pools[id]!.members = {};
    trimmedPools.push(id);
    datagram = await encodeHeartbeat(trimmed, key);
    if (datagram.length <= limit) break;
  }
  return { datagram, trimmedPools };
}
