// A constant-rate HTTP client run inside a network namespace (`ip netns exec
// NS node ns-load-main.js JSON`), for tests whose clients must not be on the
// host: one new connection per request, each request's outcome printed as a
// JSON line as soon as it ends. Stops when its stdin closes.
import http from 'node:http';

interface Options {
  url: string;
  rate: number;
  timeoutMs: number;
  sources: string[] | null;
  cookie: boolean;
}

const o = JSON.parse(process.argv[2]!) as Options;
let running = true;
let inFlight = 0;
let n = 0;
// Per source address, the cookie the last answer set (APP_COOKIE persistence).
const cookies = new Map<string, string>();

function once(): void {
  const start = Date.now();
  const src = o.sources ? o.sources[n % o.sources.length]! : null;
  n++;
  inFlight++;
  let done = false;
  const finish = (status: number | null, member: string | null, via: string | null, error: string | null) => {
    if (done) return;
    done = true;
    inFlight--;
    process.stdout.write(`${JSON.stringify({ start, end: Date.now(), status, member, via, error, src, cookie: cookie ?? null })}\n`);
  };
  const headers: Record<string, string> = { connection: 'close' };
  const cookie = src && o.cookie ? cookies.get(src) : undefined;
  if (cookie) headers.cookie = cookie;
  const req = http.get(o.url, { agent: false, timeout: o.timeoutMs, headers, ...(src ? { localAddress: src } : {}) }, (res) => {
    const set = res.headers['set-cookie'];
    if (src && o.cookie && set?.[0]) cookies.set(src, set[0].split(';')[0]!);
    res.resume();
    res.on('end', () =>
      finish(res.statusCode ?? null, (res.headers['x-member'] as string | undefined) ?? null, (res.headers['x-via'] as string | undefined) ?? null, null),
    );
    res.on('error', (e) => finish(null, null, null, e.message));
  });
  // The whole request (connect included) has timeoutMs: a deadline, not an idle timer.
  const t = setTimeout(() => req.destroy(new Error('timeout')), o.timeoutMs);
  req.on('close', () => clearTimeout(t));
  req.on('error', (e) => finish(null, null, null, e.message));
}

const interval = 1000 / o.rate;
let next = Date.now();
function tick(): void {
  if (!running) return;
  while (Date.now() >= next) {
    once();
    next += interval;
  }
  setTimeout(tick, Math.max(1, next - Date.now()));
}
tick();
process.stdin.resume();
process.stdin.on('end', () => {
  running = false;
  const wait = setInterval(() => {
    if (inFlight === 0) {
      clearInterval(wait);
      process.exit(0);
    }
  }, 20);
});
