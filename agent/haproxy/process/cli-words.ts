// Which words may be spliced into a command for haproxy's master CLI. The
// master splits a request into commands at ';' and at a newline unless a
// backslash escapes them, takes a first word starting with '@' as the
// process to send the command to ('@@' at the start of a request switches
// the connection to that process), and a last word starting with '<<' opens
// a payload; the worker then splits the command into words at spaces and
// tabs, drops a trailing '\r', unescapes backslashes and reads each word as
// a C string, so a NUL ends it (cli.c, the same from 2.6 to 3.4). Quotes,
// '#' and '$' mean nothing there, yet the config parser reads them, so a
// word holding one reads differently on the two paths. Rather than list
// those, the characters a word may hold are listed: what addresses, numbers
// with units, paths, host names, ALPN lists and sample fetches
// (`sni req.hdr(host)`) need. Pure.

/** Letters, digits and . _ - : / , + = % ~ ( ) [ ], with '@' inside a word only (ipv4@, unix@): nothing either parser reads specially. */
const CLI_WORD = /^[A-Za-z0-9._\-:/,+=%~()[\]][A-Za-z0-9._\-:/,+=%~()[\]@]*$/;

/** Whether the master CLI and the worker take `word` as exactly this one word. */
export function isCliWord(word: string): boolean {
  return CLI_WORD.test(word);
}

/** The first word of `words` the CLI would not take as written, else null. */
export function firstUnsafeWord(words: readonly string[]): string | null {
  return words.find((w) => !isCliWord(w)) ?? null;
}
