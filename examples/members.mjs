#!/usr/bin/env node
// Small HTTP members for the quick start, on this host's loopback:
//
//   node examples/members.mjs 8081 8082 8083:not-ready
//
// Each port is one member at 127.0.0.1:PORT. A member answers every request
// with "served by 127.0.0.1:PORT"; one started `:not-ready` answers 503 to
// everything, its health check included, until it is made ready. Paths:
//   /healthz     the health check (counted as a check, not as a request)
//   /slow/MS     a request that takes MS milliseconds (a session in flight)
//   POST /ready  make this member ready (not counted)
//   POST /not-ready  make it not ready again and reset its counts (not counted)
//   /count       "127.0.0.1:PORT: N requests, N checks, ready|not ready" (not counted)
// Every other path is a request, counted whether it is answered 200 or 503.
import { createServer } from 'node:http';

const specs = process.argv.slice(2);
if (specs.length === 0 || specs.some((s) => !/^\d+(:not-ready)?$/.test(s))) {
  console.error('usage: node examples/members.mjs PORT[:not-ready]...');
  process.exit(2);
}

for (const spec of specs) {
  const [port, mode] = spec.split(':');
  const name = `127.0.0.1:${port}`;
  const member = { ready: mode !== 'not-ready', requests: 0, checks: 0 };
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const reply = (status, text) => {
      res.writeHead(status, { 'Content-Type': 'text/plain', 'X-Member': name });
      res.end(`${text}\n`);
    };
    if (path === '/ready' && req.method === 'POST') {
      member.ready = true;
      return reply(200, `${name}: ready`);
    }
    if (path === '/not-ready' && req.method === 'POST') {
      Object.assign(member, { ready: false, requests: 0, checks: 0 });
      return reply(200, `${name}: not ready, counts reset`);
    }
    if (path === '/count') {
      return reply(200, `${name}: ${member.requests} requests, ${member.checks} checks, ${member.ready ? 'ready' : 'not ready'}`);
    }
    if (path === '/healthz') member.checks++;
    else member.requests++;
    const answer = () => (member.ready ? reply(200, `served by ${name}`) : reply(503, `${name}: not ready`));
    const slow = /^\/slow\/(\d+)$/.exec(path);
    if (slow) setTimeout(answer, Number(slow[1]));
    else answer();
  });
  server.listen(Number(port), '127.0.0.1', () => {
    console.log(`member ${name} listening (${member.ready ? 'ready' : 'not ready'})`);
  });
}
