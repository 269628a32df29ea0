// Octavia 16 renders `option http-use-htx` in the internal endpoint of a
// PROMETHEUS listener (11 and 19 do not). haproxy removed the option when HTX
// became its only HTTP engine, and every binary of the matrix (2.6 on)
// refuses it as an unknown option, so a trixie controller could not load any
// load balancer with a Prometheus listener. The line asks for what haproxy
// always does; this drops it. Pure: text in, text out.

/** `text` without its `option http-use-htx` lines (comments and every other line kept byte for byte). */
export function dropHttpUseHtx(text: string): string {
  if (!text.includes('http-use-htx')) return text;
  return text
    .split('\n')
    .filter((line) => !/^\s*option\s+http-use-htx\s*(#.*)?$/.test(line))
    .join('\n');
}
