// One server line of a rendered config changed in place, so a member call
// need not render the whole load balancer again. Sections are as the
// agent's templates write them: `backend <name>` at the start of a line, its
// lines indented, server lines last, a blank line or the next section after
// it. Pure.

/**
 * `text` with `server` of `backend` set to `line` (replaced where it is, or
 * appended after the backend's last line) or removed (`line` null), and the
 * line it had before (null: none). Null when the text has no such backend.
 */
export function spliceServerLine(text: string, backend: string, server: string, line: string | null): { text: string; before: string | null } | null {
  const header = `\nbackend ${backend}\n`;
  const at = text.indexOf(header);
  if (at < 0) return null;
  const body = at + header.length;
  const end = sectionEnd(text, body);
  const prefix = `    server ${server} `;
  let lineAt = -1;
  for (let i = body; i < end; i = text.indexOf('\n', i) + 1 || end) {
    if (text.startsWith(prefix, i)) {
      lineAt = i;
      break;
    }
  }
  if (lineAt >= 0) {
    const nl = text.indexOf('\n', lineAt);
    const lineEnd = nl < 0 ? text.length : nl + 1;
    const before = text.slice(lineAt, nl < 0 ? text.length : nl);
    return { text: text.slice(0, lineAt) + (line === null ? '' : `${line}\n`) + text.slice(lineEnd), before };
  }
  if (line === null) return { text, before: null };
  return { text: `${text.slice(0, end)}${line}\n${text.slice(end)}`, before: null };
}

/** Where the section whose lines start at `body` ends: the start of its first blank or unindented line, or the end of the text. */
function sectionEnd(text: string, body: number): number {
  let i = body;
  while (i < text.length) {
    const c = text[i];
    if (c === '\n' || (c !== ' ' && c !== '\t')) return i;
    const next = text.indexOf('\n', i);
    if (next < 0) return text.length;
    i = next + 1;
  }
  return text.length;
}
