// A config text with server lines replaced, added or removed, folded into one
// string only when it is read. An API 2.0 member call changes one line of a
// config that is 430 kB at 5,000 members; a new string of that size per call
// cost 4 ms here (a fresh large allocation each time), more than the rest of
// the call. Chained member calls keep their lines as a list on the last
// folded text, and the list is folded once, when the config files are
// written (deferred-config.ts).
//
// Sections are as the agent's templates write them: `backend <name>` at the
// start of a line, its lines indented, server lines last, a blank line or the
// next section after it. A server line put in place of the old one stays
// where it was; a new one goes after the backend's last line, as a whole
// render puts a member added to the end of its pool. Pure.

/** One server line set (`line`) or removed (null). */
interface ServerLineEdit {
  backend: string;
  server: string;
  line: string | null;
}

/** Where a backend's lines are in a text: from `body` to `end` (the start of the line after them). */
interface Section {
  body: number;
  end: number;
}

/** The sections of one text, found once however many edits are made on it. */
class Sections {
  private readonly found = new Map<string, Section | null>();

  constructor(readonly text: string) {}

  of(backend: string): Section | null {
    let section = this.found.get(backend);
    if (section === undefined) {
      const header = `\nbackend ${backend}\n`;
      const at = this.text.indexOf(header);
      section = at < 0 ? null : { body: at + header.length, end: sectionEnd(this.text, at + header.length) };
      this.found.set(backend, section);
    }
    return section;
  }
}

export class EditedConfig {
  private folded: string | null;

  private constructor(
    private readonly sections: Sections,
    private readonly edits: readonly ServerLineEdit[],
  ) {
    this.folded = edits.length === 0 ? sections.text : null;
  }

  /** `text` with no edits yet. */
  static of(text: string): EditedConfig {
    return new EditedConfig(new Sections(text), []);
  }

  /** The whole text, edits folded in (once). */
  get text(): string {
    this.folded ??= fold(this.sections, this.edits);
    return this.folded;
  }

  /** Whether `backend` is there. */
  hasBackend(backend: string): boolean {
    return this.sections.of(backend) !== null;
  }

  /** The line of `server` in `backend` (null: none). */
  serverLine(backend: string, server: string): string | null {
    for (let i = this.edits.length - 1; i >= 0; i--) {
      const e = this.edits[i]!;
      if (e.backend === backend && e.server === server) return e.line;
    }
    const section = this.sections.of(backend);
    if (section === null) return null;
    const { text } = this.sections;
    // One native search, then a bound check: a loop over the lines cost 2.3 ms a call at 5,000 members.
    const found = text.indexOf(`\n    server ${server} `, section.body - 1);
    if (found < 0 || found + 1 >= section.end) return null;
    const nl = text.indexOf('\n', found + 1);
    return text.slice(found + 1, nl < 0 ? text.length : nl);
  }

  /** This config with `server` of `backend` set to `line`, or removed (null). The backend must be there. */
  withServerLine(backend: string, server: string, line: string | null): EditedConfig {
    return new EditedConfig(this.sections, [...this.edits, { backend, server, line }]);
  }
}

/** The text with every edit made, in order; each backend's lines are split and joined once. */
function fold(sections: Sections, edits: readonly ServerLineEdit[]): string {
  const byBackend = new Map<string, ServerLineEdit[]>();
  for (const e of edits) byBackend.set(e.backend, [...(byBackend.get(e.backend) ?? []), e]);
  const touched = [...byBackend].map(([backend, own]) => ({ section: sections.of(backend)!, own })).sort((a, b) => a.section.body - b.section.body);
  const { text } = sections;
  const parts: string[] = [];
  let at = 0;
  for (const { section, own } of touched) {
    parts.push(text.slice(at, section.body), editSection(text.slice(section.body, section.end), own));
    at = section.end;
  }
  parts.push(text.slice(at));
  return parts.join('');
}

/** One backend's lines with its edits made. */
function editSection(lines: string, edits: ServerLineEdit[]): string {
  const rows: string[] = lines.match(/[^\n]*\n|[^\n]+$/g) ?? [];
  const rowOf = new Map<string, number>();
  rows.forEach((row, i) => {
    const nameEnd = row.indexOf(' ', 11);
    if (row.startsWith('    server ') && nameEnd > 11) rowOf.set(row.slice(11, nameEnd), i);
  });
  for (const { server, line } of edits) {
    const i = rowOf.get(server);
    if (i !== undefined && line !== null) rows[i] = `${line}\n`;
    else if (i !== undefined) {
      rows[i] = '';
      rowOf.delete(server);
    } else if (line !== null) rowOf.set(server, rows.push(`${line}\n`) - 1);
  }
  return rows.join('');
}

/** Where the section whose lines start at `body` ends: the start of its first blank or unindented line, or the end of the text. */
function sectionEnd(text: string, body: number): number {
  const first = text[body];
  if (first !== ' ' && first !== '\t') return Math.min(body, text.length);
  const unindented = /\n(?![ \t])/g;
  unindented.lastIndex = body;
  const next = unindented.exec(text);
  return next ? next.index + 1 : text.length;
}
