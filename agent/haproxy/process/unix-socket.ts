// One command over one of haproxy's unix sockets (the master CLI, a stats
// socket): connect, send the line, read until haproxy closes. Each command has
// its own short-lived connection, so nothing is left open across reloads.
import { createConnection } from 'node:net';

/** The socket's answer; rejects with the reason (refused, missing, no answer within `timeoutMs`). */
export function socketCommand(path: string, command: string, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const sock = createConnection(path);
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`no answer to "${command}" within ${timeoutMs} ms`));
    }, timeoutMs);
    sock.on('connect', () => sock.end(`${command}\n`));
    sock.on('data', (d) => chunks.push(d));
    sock.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    sock.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
  });
}
