// Where two versions of a config differ, as whole lines: a change touches a
// few lines of a config with thousands, so the planners read only those.
// Found by comparing characters from both ends, without splitting either
// text into lines (at 10,000 members, two splits were most of the cost).

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
  let i = 0;
  while (i < shorter && before.charCodeAt(i) === after.charCodeAt(i)) i++;
  // Back to the start of the line the first difference is on.
  // (lastIndexOf reads a negative position as 0: the first line needs no search.)
  const start = i === before.length && i === after.length ? i : i === 0 ? 0 : before.lastIndexOf('\n', i - 1) + 1;

  let j = 0;
  while (j < shorter - start && before.charCodeAt(before.length - 1 - j) === after.charCodeAt(after.length - 1 - j)) j++;
  // The common end counts from a line start in both texts: from the next one
  // when it begins mid-line in either (its '\n' lies in the common end).
  let beforeEnd = before.length - j;
  const atLineStart = (text: string, at: number) => at === start || text.charCodeAt(at - 1) === 10;
  if (!atLineStart(before, beforeEnd) || !atLineStart(after, after.length - j)) {
    const newline = before.indexOf('\n', beforeEnd);
    beforeEnd = newline < 0 ? before.length : newline + 1;
  }
  return { start, beforeEnd, afterEnd: beforeEnd - before.length + after.length };
}
