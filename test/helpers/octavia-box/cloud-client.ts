// A caller of the box's cloud as Octavia's drivers are (PROTOCOL.md,
// Transport): one connection per call, one JSON line each way.
import { createConnection } from 'node:net';

export type CloudAnswer = { result: unknown } | { error: { type: string; message: string } };

/** One raw line sent, the answer line parsed (for tests of malformed requests too). */
export function cloudLine(socketPath: string, line: string, timeoutMs = 120_000): Promise<CloudAnswer> {
  return new Promise((resolve, reject) => {
    const sock = createConnection(socketPath);
    let buf = '';
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`cloud: no answer to ${line.slice(0, 200)} within ${timeoutMs} ms`));
    }, timeoutMs);
    sock.setEncoding('utf8');
    sock.on('connect', () => sock.write(`${line}\n`));
    sock.on('data', (d: string) => {
      buf += d;
    });
    sock.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    sock.on('close', () => {
      clearTimeout(timer);
      const answer = buf.split('\n')[0] ?? '';
      try {
        resolve(JSON.parse(answer) as CloudAnswer);
      } catch {
        reject(new Error(`cloud: not a JSON answer to ${line.slice(0, 200)}: ${JSON.stringify(buf.slice(0, 500))}`));
      }
    });
  });
}

/** An error answer, thrown. */
export class CloudCallError extends Error {
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(`${type}: ${message}`);
  }
}

/** A method called; its result, or a CloudCallError with the answer's type. */
export async function cloudCall<T = unknown>(socketPath: string, method: string, params: Record<string, unknown> = {}): Promise<T> {
  const a = await cloudLine(socketPath, JSON.stringify({ method, params }));
  if ('error' in a) throw new CloudCallError(a.error.type, a.error.message);
  return a.result as T;
}

/** The error type a call answers with (null if it succeeded). */
export async function cloudErrorType(socketPath: string, method: string, params: Record<string, unknown> = {}): Promise<string | null> {
  try {
    await cloudCall(socketPath, method, params);
    return null;
  } catch (err) {
    if (err instanceof CloudCallError) return err.type;
    throw err;
  }
}
