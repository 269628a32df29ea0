// Structured logging (pino: JSON lines, cheap when a level is off, and the
// same shape for every module). Level from AMPHORA_AGENT_LOG_LEVEL, default info.
// Under systemd (the image) stdout is the journal and gets JSON; on a terminal
// a person reads it, so each line is printed the way prettyLine says. A dozen
// lines here instead of pino-pretty, which would bring a dozen packages into
// every amphora image for the one place nobody runs the agent in production.
import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';

export type { Logger };

const LEVEL_NAMES: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };

/** One of pino's JSON lines as a person reads it: time, level, [module] message, then the other fields as key=value. */
export function prettyLine(json: string): string {
  const { time, level, module, msg, name: _name, pid: _pid, hostname: _hostname, ...fields } = JSON.parse(json) as Record<string, unknown>;
  const values = Object.entries(fields).map(([key, value]) => {
    // A tenant's string may carry terminal escapes or newlines: those are printed escaped, as JSON.
    const text = typeof value === 'string' && !/[\s"=\p{Cc}]/u.test(value) ? value : JSON.stringify(value);
    return `${key}=${text}`;
  });
  const when = typeof time === 'number' ? new Date(time).toISOString().slice(11, 23) : '';
  return `${[when, LEVEL_NAMES[level as number] ?? String(level), module ? `[${String(module)}]` : '', printable(String(msg ?? '')), ...values].filter(Boolean).join(' ')}\n`;
}

/** A message as is, unless it holds control characters (a terminal escape, a newline): then JSON-escaped. */
function printable(text: string): string {
  return /\p{Cc}/u.test(text) ? JSON.stringify(text) : text;
}

const options: LoggerOptions = {
  name: 'amphora-agent',
  level: process.env.AMPHORA_AGENT_LOG_LEVEL ?? 'info',
  base: { pid: process.pid },
};
const terminal: DestinationStream = { write: (line) => process.stdout.write(prettyLine(line)) };

export const rootLogger: Logger = process.stdout.isTTY ? pino(options, terminal) : pino(options);
