// haproxy configs shaped like the ones an unmodified Octavia controller renders
// (global/defaults of its base template, one HTTP listener, one pool with an
// HTTP health monitor), small enough to write by hand in a test.
import { join } from 'node:path';

export interface ConfigOptions {
  lbId: string;
  baseDir: string;
  /** ip:port the listener binds (inside the amphora namespace). */
  bind: string;
  members: { id: string; address: string }[];
  /** Health monitor timings; null for a pool without a monitor. */
  monitor?: { interS: number; rise: number; fall: number } | null;
  /** Changes the rendered text without changing behaviour (forces a "real" new config). */
  generation?: number;
  connectionLimit?: number;
  /** Add an empty backend named after the generation, so `show stat` tells which config runs. */
  markGeneration?: boolean;
  /**
   * ACTIVE_STANDBY's SOURCE_IP persistence: a peers section (this amphora's
   * peer, named as the agent's -L, and the other one's) and a stick table on
   * the client address.
   */
  peers?: { local: { name: string; address: string }; remote: { name: string; address: string } };
}

export function octaviaStyleConfig(o: ConfigOptions): string {
  const monitor = o.monitor === undefined ? { interS: 1, rise: 2, fall: 2 } : o.monitor;
  const limit = o.connectionLimit ?? 5000;
  const listener = 'listener-1';
  const pool = `pool-1:${listener}`;
  const check = monitor ? ` check inter ${monitor.interS}s fall ${monitor.fall} rise ${monitor.rise}` : '';
  const peersName = `${o.lbId.replace(/-/g, '')}_peers`;
  return [
    `# Configuration for loadbalancer ${o.lbId}`,
    'global',
    '    daemon',
    '    user nobody',
    `    stats socket ${join(o.baseDir, `${o.lbId}.sock`)} mode 0666 level user`,
    `    server-state-file ${join(o.baseDir, o.lbId, 'servers-state')}`,
    `    maxconn ${limit}`,
    '',
    'defaults',
    '    no log',
    '    retries 3',
    '    option redispatch',
    '    option splice-request',
    '    option splice-response',
    '    option http-keep-alive',
    '',
    ...(o.peers
      ? [`peers ${peersName}`, `    peer ${o.peers.local.name} ${o.peers.local.address}`, `    peer ${o.peers.remote.name} ${o.peers.remote.address}`, '']
      : []),
    `frontend ${listener}`,
    `    maxconn ${limit}`,
    `    bind ${o.bind}`,
    '    mode http',
    `    default_backend ${pool}`,
    `    timeout client ${50000 + (o.generation ?? 0)}`,
    '',
    `backend ${pool}`,
    '    mode http',
    '    balance roundrobin',
    ...(o.peers ? [`    stick-table type ip size 10k peers ${peersName}`, '    stick on src'] : []),
    ...(monitor
      ? ['    load-server-state-from-file global', '    timeout check 1s', '    option httpchk GET /healthz', '    http-check expect rstatus 200']
      : []),
    `    fullconn ${limit}`,
    '    option allbackups',
    '    timeout connect 5000',
    '    timeout server 50000',
    ...o.members.map((m) => `    server ${m.id} ${m.address} weight 1${check}`),
    '',
    ...(o.markGeneration ? [`backend generation-${o.generation ?? 0}`, '    mode http', ''] : []),
  ].join('\n');
}
