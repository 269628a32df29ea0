// The agent's log on a terminal (issue 29): pino's JSON line as a person reads it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { prettyLine } from '../../agent/log.js';

const at = Date.UTC(2026, 11, 7, 16, 5, 9, 42);

test("time, level, [module] and message first; pino's own name, pid and hostname left out", () => {
  const line = prettyLine(JSON.stringify({ level: 30, time: at, pid: 7, hostname: 'amp', name: 'amphora-agent', module: 'heartbeat', msg: 'sent' }));
  assert.is(line, '16:05:09.042 INFO [heartbeat] sent\n');
});

test('the other fields as key=value: plain words bare, anything with spaces, quotes or = as JSON', () => {
  const line = prettyLine(JSON.stringify({ level: 50, time: at, msg: 'reload failed', lb: 'c0ffee', err: 'exit 1: bad "x"', pools: 2, detail: { a: 1 } }));
  assert.is(line, '16:05:09.042 ERROR reload failed lb=c0ffee err="exit 1: bad \\"x\\"" pools=2 detail={"a":1}\n');
});

test('a level pino does not name is printed as its number', () => {
  assert.is(prettyLine(JSON.stringify({ level: 35, time: at, msg: 'x' })), '16:05:09.042 35 x\n');
});

test('control characters (a terminal escape, a newline) reach the terminal escaped, in fields and in the message', () => {
  const line = prettyLine(JSON.stringify({ level: 30, time: at, msg: 'bad\nline', member: '\u001b[2Jx' }));
  assert.is(line, '16:05:09.042 INFO "bad\\nline" member="\\u001b[2Jx"\n');
});

test.run();
