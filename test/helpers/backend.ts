// A small HTTP member for tests, switchable between the ways a real member can
// be unavailable. It counts health checks and real requests separately, so a
// test can say "this member received 0 requests" while its checks go on.
import { createServer, type Server, type Socket } from 'node:net';

export type BackendMode = 'ready' | 'not-ready' | 'reset' | 'refused';

/** The path health monitors use in tests; everything else is real traffic. */
export const CHECK_PATH = '/healthz';

export class TestBackend {
  mode: BackendMode;
  /** Real (non-check) requests that reached this member, in any mode. */
  requests = 0;
  checks = 0;
  /** Request line and Host header (null when absent) of the last health check received. */
  lastCheck: { requestLine: string; host: string | null } | null = null;
  /** Time of the first real request answered with 200. */
  firstServedAt: number | null = null;
  /** Times of the health checks answered with 200, in order. */
  readonly passedChecksAt: number[] = [];
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();

  constructor(
    readonly name: string,
    readonly host: string,
    readonly port: number,
    mode: BackendMode = 'ready',
  ) {
    this.mode = mode;
  }

  get address(): string {
    return `${this.host}:${this.port}`;
  }

  async start(): Promise<this> {
    if (this.mode !== 'refused') await this.listen();
    return this;
  }

  async setMode(mode: BackendMode): Promise<void> {
    const was = this.mode;
    this.mode = mode;
    if (mode === 'refused' && was !== 'refused') await this.close();
    if (mode !== 'refused' && was === 'refused') await this.listen();
  }

  async stop(): Promise<void> {
    await this.close();
  }

  private listen(): Promise<void> {
    const server = createServer((sock) => this.onConnection(sock));
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: this.host, port: this.port, exclusive: true }, () => resolve());
    });
  }

  private async close(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise<void>((r) => server.close(() => r()));
  }

  private onConnection(sock: Socket): void {
    this.sockets.add(sock);
    sock.on('close', () => this.sockets.delete(sock));
    sock.on('error', () => undefined);
    let buf = '';
    sock.on('data', (d) => {
      buf += d.toString('latin1');
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buf.slice(0, end);
      buf = buf.slice(end + 4);
      this.answer(sock, head);
    });
  }

  private answer(sock: Socket, head: string): void {
    const path = head.split(' ')[1] ?? '/';
    const isCheck = path === CHECK_PATH;
    if (isCheck) {
      this.checks++;
      this.lastCheck = { requestLine: head.split('\r\n')[0]!, host: /^host:[ \t]*(.*)$/im.exec(head)?.[1]?.trim() ?? null };
    } else this.requests++;
    if (this.mode === 'reset') {
      sock.resetAndDestroy();
      return;
    }
    // `/slow/<ms>` answers after that many milliseconds: a long-lived session.
    const slow = /^\/slow\/(\d+)$/.exec(path);
    if (slow) {
      setTimeout(() => this.respond(sock, head, isCheck), Number(slow[1]));
      return;
    }
    this.respond(sock, head, isCheck);
  }

  private respond(sock: Socket, head: string, isCheck: boolean): void {
    const ready = this.mode === 'ready';
    if (ready && !isCheck && this.firstServedAt === null) this.firstServedAt = Date.now();
    if (ready && isCheck) this.passedChecksAt.push(Date.now());
    const body = ready ? `${this.name}\n` : 'not ready\n';
    // HTTP/1.0 (what haproxy health checks send) closes unless asked otherwise.
    const http11 = / HTTP\/1\.1\r?$/m.test(head.split('\n')[0] ?? '');
    const keepAlive = http11 ? !/^connection:\s*close/im.test(head) : /^connection:\s*keep-alive/im.test(head);
    sock.write(
      `HTTP/1.1 ${ready ? '200 OK' : '503 Service Unavailable'}\r\n` +
        `Content-Type: text/plain\r\nX-Member: ${this.name}\r\nContent-Length: ${body.length}\r\n` +
        `Connection: ${keepAlive ? 'keep-alive' : 'close'}\r\n\r\n${body}`,
    );
    if (!keepAlive) sock.end();
  }
}
