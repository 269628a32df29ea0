// `amphora-agent haproxy-vrrp-check SOCKET...`: keepalived's check that every
// load balancer's haproxy answers on its stats socket (Octavia's
// haproxy-vrrp-check). Exit 0 when all answer, 1 otherwise.
import { createConnection } from 'node:net';

function answers(socket: string): Promise<boolean> {
  return new Promise((resolve) => {
    let got = '';
    const s = createConnection(socket);
    const timer = setTimeout(() => {
      s.destroy();
      resolve(false);
    }, 5000);
    s.on('connect', () => s.end('show stat -1 -1 -1\n'));
    s.on('data', (d) => {
      got += d;
    });
    s.on('error', () => {
      clearTimeout(timer);
      resolve(false);
    });
    s.on('close', () => {
      clearTimeout(timer);
      resolve(got.trim().length > 0);
    });
  });
}

export async function vrrpCheck(sockets: string[]): Promise<number> {
  const results = await Promise.all(sockets.map(answers));
  return results.every(Boolean) ? 0 : 1;
}
