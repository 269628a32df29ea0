// The heartbeat envelope Octavia's health manager reads: zlib (level 9) of the
// JSON message, followed by the hex HMAC-SHA256 of the compressed bytes,
// keyed with [health_manager] heartbeat_key. Pure.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { deflateSync, inflateSync } from 'node:zlib';

/** Octavia signs with the literal "None" when no key is configured. */
const keyBytes = (key: string | null) => Buffer.from(key ?? 'None', 'utf8');

export function encodeHeartbeat(message: unknown, key: string | null): Buffer {
  const payload = deflateSync(Buffer.from(JSON.stringify(message), 'utf8'), { level: 9 });
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
