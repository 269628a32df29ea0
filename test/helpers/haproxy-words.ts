// Asks a real haproxy which words it reads on config lines. Each line under
// test becomes the pattern list of an ACL,
//   acl wN req.hdr(x) -m str -- <line>
// in a config haproxy then runs; `show acl #<id>` on its stats socket lists
// the patterns byte for byte, one "<pointer> <pattern>\n" each, in order.
// `-m str` keeps a pattern as it is and `--` ends the ACL's flags, so every
// word haproxy reads on the line comes back. Two limits: an empty word ends
// an ACL's patterns (tokenizeLine refuses empty words anyway), and the six
// words before the line count towards haproxy's 64.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import type { HaproxyUnderTest } from './haproxies.js';

export const ACL_PREFIX = 'acl w req.hdr(x) -m str -- ';

/** The config that reads `lines` as ACL patterns, one ACL per line, in a backend; no listener, no port. */
function configFor(socket: string, lines: string[]): string {
  const head = [
    'global',
    `    stats socket ${socket} level admin`,
    'defaults',
    '    mode http',
    '    timeout client 1s',
    '    timeout server 1s',
    '    timeout connect 1s',
    'backend words',
  ];
  return `${[...head, ...lines.map((l, i) => `    ${ACL_PREFIX.replace('acl w', `acl w${i}`)}${l}`)].join('\n')}\n`;
}

/** One CLI command on a fresh connection; the answer as bytes in a latin1 string. */
function cli(socket: string, command: string, timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const s = createConnection(socket);
    s.setTimeout(timeoutMs, () => s.destroy(new Error(`${command}: no answer in ${timeoutMs} ms`)));
    s.on('connect', () => s.write(`${command}\n`));
    s.on('data', (d) => chunks.push(d));
    s.on('error', reject);
    s.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
  });
}

export interface HaproxyReading {
  /** show acl #id's answer for each line, as bytes in a latin1 string; null if haproxy did not start. */
  answers: string[] | null;
  /** haproxy's output when it did not start (its refusal). */
  output: string;
}

/**
 * Runs haproxy `h` on a config holding `lines` (each as an ACL's patterns) in
 * `dir` (which its chroot, if any, sees), and reads back each line's patterns.
 */
export async function readByHaproxy(h: HaproxyUnderTest, dir: string, name: string, lines: string[]): Promise<HaproxyReading> {
  const socket = join(dir, `${name}.sock`);
  const cfg = join(dir, `${name}.cfg`);
  writeFileSync(cfg, configFor(socket, lines));
  const child = spawn(h.command[0]!, [...h.command.slice(1), '-db', '-f', cfg], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => {
    output += d;
  });
  child.stderr.on('data', (d) => {
    output += d;
  });
  let exited = false;
  const exit = new Promise<void>((resolve) =>
    child.on('exit', () => {
      exited = true;
      resolve();
    }),
  );
  try {
    // haproxy is up once its socket answers; it may also refuse the config and exit.
    const deadline = Date.now() + 15_000;
    let list: string | null = null;
    while (list === null) {
      if (exited) return { answers: null, output };
      if (Date.now() > deadline) throw new Error(`${h.label}: no stats socket after 15 s: ${output}`);
      list = await cli(socket, 'show acl').catch(async () => {
        await Promise.race([exit, new Promise((r) => setTimeout(r, 50))]);
        return null;
      });
    }
    // "<id> () acl 'req.hdr' file '<cfg>' line <n>. ...": config line n is ACL w(n - 9).
    const ids = new Map<number, string>();
    for (const m of list.matchAll(/^(\d+) \(\) acl 'req\.hdr' file '[^']*' line (\d+)\./gm)) ids.set(Number(m[2]) - 9, m[1]!);
    const answers: string[] = [];
    for (let i = 0; i < lines.length; i++) {
      const id = ids.get(i);
      answers.push(id === undefined ? '' : await cli(socket, `show acl #${id}`));
    }
    return { answers, output };
  } finally {
    if (!exited) {
      child.kill('SIGKILL');
      await exit;
    }
  }
}

/** Whether `answer` (show acl #id, latin1) lists exactly `words`, in order. */
export function answerIs(answer: string, words: string[]): boolean {
  const bytes = (w: string) =>
    Buffer.from(w, 'utf8')
      .toString('latin1')
      .replace(/[\\^$.*+?()[\]{}|]/g, '\\$&');
  return new RegExp(`^${words.map((w) => `0x[0-9a-f]+ ${bytes(w)}\\n`).join('')}\\n?$`).test(answer);
}

/** An answer shown for a failure message: the patterns after their pointers, UTF-8 decoded where they are. */
export function showAnswer(answer: string): string {
  return JSON.stringify(
    Buffer.from(answer, 'latin1')
      .toString('utf8')
      .replace(/^0x[0-9a-f]+ /gm, '')
      .replace(/\n$/, '')
      .split('\n'),
  );
}
