// The changed lines of two configs, found by characters, against the same
// question answered by splitting both texts into lines.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { changedRegion } from '../../agent/haproxy/config/changed-region.js';

/** By lines: equal lines from the start, then from the end, not overlapping; as character offsets. */
function byLines(before: string, after: string) {
  const b = before.split('\n');
  const a = after.split('\n');
  const shorter = Math.min(a.length, b.length);
  let start = 0;
  while (start < shorter && a[start] === b[start]) start++;
  let end = 0;
  while (end < shorter - start && a[a.length - 1 - end] === b[b.length - 1 - end]) end++;
  const offset = (lines: string[], n: number) => Math.min(lines.slice(0, n).join('\n').length + (n > 0 ? 1 : 0), lines.join('\n').length);
  return { before: b.slice(start, b.length - end), after: a.slice(start, a.length - end), startOffset: offset(b, start) };
}

function check(before: string, after: string) {
  const r = changedRegion(before, after);
  const what = JSON.stringify({ before, after, r });
  assert.is(before.slice(0, r.start), after.slice(0, r.start), what);
  assert.is(before.slice(r.beforeEnd), after.slice(r.afterEnd), what);
  assert.ok(r.start <= r.beforeEnd && r.start <= r.afterEnd, what);
  for (const [text, at] of [
    [before, r.start],
    [before, r.beforeEnd],
    [after, r.afterEnd],
  ] as const) {
    assert.ok(at === 0 || at === text.length || text[at - 1] === '\n', `${what}: ${at} is not a line start`);
  }
  // The same lines as a split finds, give or take the empty line after a final
  // newline, when both texts end in one, as configs do (a last line without it
  // compares unequal to the same line with it, so one more line may count as changed).
  if (!before.endsWith('\n') || !after.endsWith('\n')) return;
  const expected = byLines(before, after);
  const lines = (text: string, from: number, to: number) =>
    text
      .slice(from, to)
      .split('\n')
      .filter((l, i, all) => l !== '' || i < all.length - 1);
  const nonEmpty = (ls: string[]) => ls.filter((l) => l !== '');
  assert.equal(nonEmpty(lines(before, r.start, r.beforeEnd)), nonEmpty(expected.before), what);
  assert.equal(nonEmpty(lines(after, r.start, r.afterEnd)), nonEmpty(expected.after), what);
}

test('equal texts: an empty region at the end', () => {
  for (const t of ['', 'a', 'a\n', 'a\nb\n']) {
    assert.equal(changedRegion(t, t), { start: t.length, beforeEnd: t.length, afterEnd: t.length });
  }
});

test('one changed line among many: only that line', () => {
  const lines = Array.from({ length: 1000 }, (_, i) => `    server m${i} 10.0.${i >> 8}.${i & 255}:80 check`);
  const before = `global\n    maxconn 100\n${lines.join('\n')}\n`;
  const after = before.replace('m500 10.0.1.244:80 check', 'm500 10.0.1.244:80 check weight 5');
  const r = changedRegion(before, after);
  assert.is(before.slice(r.start, r.beforeEnd), `${lines[500]}\n`);
  assert.is(after.slice(r.start, r.afterEnd), `${lines[500]} weight 5\n`);
});

test('a change whose common end starts mid-line in one text ends at the next line start', () => {
  // "ab\nc" against "xb\nc": the common end "b\nc" begins mid-line.
  assert.equal(changedRegion('ab\nc', 'xb\nc'), { start: 0, beforeEnd: 3, afterEnd: 3 });
  // Repeated lines: the common start and the common end must not overlap.
  assert.equal(changedRegion('a\na\n', 'a\na\na\n'), { start: 4, beforeEnd: 4, afterEnd: 6 });
});

test('random edits: the region holds every difference, and the same changed lines as a split finds', () => {
  let seed = 7;
  const next = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  const words = ['a', 'b', 'ab', '', 'server x', 'server y'];
  const text = () => Array.from({ length: next(6) }, () => words[next(words.length)]).join('\n') + (next(2) ? '\n' : '');
  for (let i = 0; i < 3000; i++) {
    const before = text();
    const after =
      next(3) === 0
        ? text()
        : before
            .split('\n')
            .map((l) => (next(4) === 0 ? words[next(words.length)] : l))
            .join('\n');
    check(before, after);
  }
});

test.run();
