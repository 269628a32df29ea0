// Where two versions of a config differ, as whole lines: a change touches a
// few lines of a config with thousands, so the planners read only those.
// Found by comparing the texts from both ends without splitting them into
// lines, and chunk by chunk: string comparison is native code, while a loop
// over characters is slow in the agent's V8 (no optimizing compiler:
// main.ts), 16 ms for a 700 kB config against well under 1 ms.

/**
 * `before.slice(0, start)` equals `after.slice(0, start)`, and
 * `before.slice(beforeEnd)` equals `after.slice(afterEnd)`; all three offsets
 * are line starts (or text ends), and the common end does not overlap the
 * common start. Equal texts give an empty region.
 */
export interface ChangedRegion {
  start: number;
  beforeEnd: number;
  afterEnd: number;
}

export function changedRegion(before: string, after: string): ChangedRegion {
  const shorter = Math.min(before.length, after.length);
  const i = commonLength(shorter, (from, to) => before.substring(from, to) === after.substring(from, to));
  // Back to the start of the line the first difference is on
  // (lastIndexOf reads a negative position as 0: the first line needs no search).
  const start = i === before.length && i === after.length ? i : i === 0 ? 0 : before.lastIndexOf('\n', i - 1) + 1;

  const b = before.length;
  const a = after.length;
  const j = commonLength(shorter - start, (from, to) => before.substring(b - to, b - from) === after.substring(a - to, a - from));
  // The common end counts from a line start in both texts: from the next one
  // when it begins mid-line in either (its '\n' lies in the common end).
  let beforeEnd = b - j;
  const atLineStart = (text: string, at: number) => at === start || text.charCodeAt(at - 1) === 10;
  if (!atLineStart(before, beforeEnd) || !atLineStart(after, a - j)) {
    const newline = before.indexOf('\n', beforeEnd);
    beforeEnd = newline < 0 ? b : newline + 1;
  }
  return { start, beforeEnd, afterEnd: beforeEnd - b + a };
}

const CHUNK = 4096;

/**
 * How far, up to `limit`, `same(from, to)` holds for [0, to): whole chunks
 * first, then a binary search inside the first chunk that differs.
 */
function commonLength(limit: number, same: (from: number, to: number) => boolean): number {
  let at = 0;
  while (at < limit) {
    const end = Math.min(at + CHUNK, limit);
    if (same(at, end)) {
      at = end;
      continue;
    }
    // [at, lo) is the same; [lo, hi) holds a difference.
    let lo = at;
    let hi = end;
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1;
      if (same(lo, mid)) lo = mid;
      else hi = mid;
    }
    return lo;
  }
  return limit;
}
