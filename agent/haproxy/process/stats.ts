// haproxy's statistics (`show stat` on a load balancer's stats socket): the
// rows the heartbeat, the API 2.0 status and the runtime drain read. The
// socket and its CSV are haproxy's; what a heartbeat makes of them is health/'s.
import { socketCommand } from './unix-socket.js';

export interface StatRow {
  pxname: string;
  svname: string;
  status: string;
  weight: string;
  bin: number;
  bout: number;
  scur: number;
  stot: number;
  ereq: number;
  /** The last check's result (L7OK, L4CON...; INI before the first), without the "* " of a check in progress. */
  checkStatus: string;
}

/** `show stat` from a stats socket, as text. */
export function showStat(socketPath: string, timeoutMs = 2000): Promise<string> {
  return socketCommand(socketPath, 'show stat', timeoutMs);
}

/** haproxy's `show stat` CSV -> rows, by column name (the column set differs between versions). */
export function parseShowStat(csv: string): StatRow[] {
  const lines = csv.split('\n').filter((l) => l.trim() !== '');
  if (lines.length === 0) return [];
  const cols = lines[0]!.replace(/^#\s*/, '').split(',');
  const at = (name: string) => cols.indexOf(name);
  const idx = {
    pxname: at('pxname'),
    svname: at('svname'),
    status: at('status'),
    weight: at('weight'),
    bin: at('bin'),
    bout: at('bout'),
    scur: at('scur'),
    stot: at('stot'),
    ereq: at('ereq'),
    checkStatus: at('check_status'),
  };
  // The columns read are among the first forty of about a hundred: a row
  // is split only that far (a third of a 5,000-member heartbeat's time went
  // into splitting whole rows).
  const fields = Math.max(...Object.values(idx)) + 1;
  return lines.slice(1).map((line) => {
    const f = line.split(',', fields);
    const num = (i: number) => Number(f[i] || 0);
    return {
      pxname: f[idx.pxname] ?? '',
      svname: f[idx.svname] ?? '',
      status: f[idx.status] ?? '',
      weight: f[idx.weight] ?? '',
      bin: num(idx.bin),
      bout: num(idx.bout),
      scur: num(idx.scur),
      stot: num(idx.stot),
      ereq: num(idx.ereq),
      checkStatus: (f[idx.checkStatus] ?? '').replace(/^\* /, ''),
    };
  });
}
