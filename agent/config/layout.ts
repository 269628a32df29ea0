// Paths derived from amphora-agent.conf options that more than one layer
// names (the renderer writes them into configs, the policy checks uploads
// against them, the engine and keepalived use them), joined here and nowhere
// else. The files of a load balancer's own directory are the engine's
// (haproxy/layout.ts) and API 2.0's (loadbalancer/spec-store.ts). Pure.
import { join } from 'node:path';

/** A load balancer's directory: <base_path>/<lb_id>, as in Octavia (its files: haproxy/layout.ts). */
export function loadBalancerDir(basePath: string, lbId: string): string {
  return join(basePath, lbId);
}

/** The server-state file Octavia's configs declare, in the load balancer's directory. */
export function serverStateFile(basePath: string, lbId: string): string {
  return join(loadBalancerDir(basePath, lbId), 'servers-state');
}

/** A load balancer's certificates (PEM files, crt-lists): <base_cert_dir>/<lb_id>, as Octavia keeps them. */
export function certificateDir(baseCertDir: string, lbId: string): string {
  return join(baseCertDir, lbId);
}

/** The stats socket Octavia's configs declare for a load balancer: <base_path>/<lb_id>.sock. */
export function statsSocket(basePath: string, lbId: string): string {
  return join(basePath, `${lbId}.sock`);
}

/** The external check command of Octavia's PING health monitors. */
export function pingWrapper(basePath: string): string {
  return join(basePath, 'ping-wrapper.sh');
}

/** The script the VRRP keepalived's vrrp_script runs (it runs check_scripts/*). */
export function vrrpCheckScript(basePath: string): string {
  return join(basePath, 'vrrp', 'check_script.sh');
}

/** The UDP health check LVS listeners' MISC_CHECK runs. */
export function udpCheckScript(basePath: string): string {
  return join(basePath, 'lvs', 'check', 'udp_check.sh');
}

/** The track file the agent adds to VRRP configs (keepalived/haproxy-track.ts). */
export function haproxyTrackFile(basePath: string): string {
  return join(basePath, 'vrrp', 'haproxy.track');
}
