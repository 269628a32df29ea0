// An abusive client of the agent's API, in a process of its own so its own
// work (hundreds of TLS handshakes) does not delay the well-behaved client the
// test measures. Argument: JSON AbuseOptions. Keeps its connections up (each
// one the server closes is replaced) until its stdin closes; prints "ready"
// once all are open, then at the end one JSON line: every connection's kind,
// when its server-side clock started and when the server closed it.
import net from 'node:net';
import tls from 'node:tls';
import { readFileSync } from 'node:fs';

export interface AbuseOptions {
  port: number;
  servername: string;
  ca: string;
  cert: string;
  key: string;
  idle: number;
  slow: number;
  halfOpen: number;
  churners: number;
}

export type AbuseKind = 'idle' | 'slow' | 'half-open';

export interface AbuseReport {
  /** Per kind: [ms from the start of the server's clock to the server's close] for every connection opened. */
  lives: Record<AbuseKind, number[]>;
  /** Connections still open when the report was made, by kind. */
  open: Record<AbuseKind, number>;
  churned: number;
}

const o = JSON.parse(process.argv[2]!) as AbuseOptions;
const tlsOptions: tls.ConnectionOptions = {
  host: '127.0.0.1',
  port: o.port,
  servername: o.servername,
  ca: readFileSync(o.ca),
  cert: readFileSync(o.cert),
  key: readFileSync(o.key),
};
let running = true;
const lives: AbuseReport['lives'] = { idle: [], slow: [], 'half-open': [] };
let open = 0;
const openByKind: Record<AbuseKind, number> = { idle: 0, slow: 0, 'half-open': 0 };
let churned = 0;

// Whatever the server sends is read and dropped: an unread stream never
// emits 'end', and the server's close would go unseen.
const settled = <T extends net.Socket>(s: T, event: string) =>
  new Promise<T>((resolve, reject) => {
    s.on('error', () => undefined);
    s.resume();
    s.once(event, () => resolve(s));
    s.once('error', reject);
  });

/** A TLS connection with the controller's certificate that sends nothing after the handshake. */
const idle = () => settled(tls.connect(tlsOptions), 'secureConnect');

/** A request's first line, then one more header every second, never the blank line. */
async function slowHeaders(): Promise<net.Socket> {
  const s = await settled(tls.connect(tlsOptions), 'secureConnect');
  s.write('GET /1.0/info HTTP/1.1\r\nHost: amphora\r\n');
  const drip = setInterval(() => s.writable && s.write(`X-Drip-${Date.now()}: 1\r\n`), 1000);
  s.on('close', () => clearInterval(drip));
  return s;
}

/** Every other one a bare TCP connection, the others the first bytes of a ClientHello. */
let halfOpens = 0;
async function halfOpen(): Promise<net.Socket> {
  const s = await settled(net.connect(o.port, '127.0.0.1'), 'connect');
  if (halfOpens++ % 2) s.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]));
  return s;
}

/** Keep one connection of `kind` up: when the server closes it, open the next. */
async function keep(kind: AbuseKind, connect: () => Promise<net.Socket>): Promise<void> {
  const opened = Date.now();
  let socket: net.Socket;
  try {
    socket = await connect();
  } catch {
    if (running) setTimeout(() => void keep(kind, connect), 100);
    return;
  }
  // The server's clock: from the TCP connect for the handshake timeout, from the handshake's end (first bytes) otherwise.
  const clock = kind === 'half-open' ? opened : Date.now();
  open++;
  openByKind[kind]++;
  socket.on('close', () => {
    open--;
    openByKind[kind]--;
    lives[kind].push(Date.now() - clock);
    if (running) void keep(kind, connect);
  });
}

/** Connect, then garbage or a handshake without a client certificate: the server closes each at once. */
async function churn(): Promise<void> {
  while (running) {
    const done =
      churned++ % 2
        ? settled(net.connect(o.port, '127.0.0.1'), 'connect').then((s) => {
            s.write(Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n\x00\xff'.repeat(20), 'latin1'));
            return settled(s, 'close');
          })
        : settled(tls.connect({ ...tlsOptions, cert: undefined, key: undefined }), 'close');
    await done.catch(() => undefined);
  }
}

const starts: [number, AbuseKind, () => Promise<net.Socket>][] = [];
for (const [kind, connect, count] of [
  ['idle', idle, o.idle],
  ['slow', slowHeaders, o.slow],
  ['half-open', halfOpen, o.halfOpen],
] as const) {
  for (let i = 0; i < count; i++) starts.push([i / count, kind, connect]);
}
// Kinds interleaved, spread over about one timeout (10 s): the replacements
// then come as a steady stream (the flood) rather than all at once.
starts.sort((a, b) => a[0] - b[0]);
for (let i = 0; i < starts.length; i += 25) {
  await Promise.all(starts.slice(i, i + 25).map(([, kind, connect]) => keep(kind, connect)));
  await new Promise((r) => setTimeout(r, 300));
}
process.stdout.write(`ready ${open}\n`);
const churners = Array.from({ length: o.churners }, churn);
process.stdin.resume();
process.stdin.on('end', async () => {
  running = false;
  await Promise.all(churners);
  // Nothing closes from this side: wait for the server to close every connection.
  const deadline = Date.now() + 60_000;
  while (open > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  const report: AbuseReport = { lives, open: openByKind, churned };
  process.stdout.write(`${JSON.stringify(report)}\n`);
  process.exit(0);
});
