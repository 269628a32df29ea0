// GET /1.0/details: the amphora's resources, field for field as Octavia's agent
// reports them (the controller sizes tune.ssl.cachesize from memory and picks
// nbthread/cpu-map from cpu_count and the tuned profile). Values come straight
// from /proc and statfs so their meaning matches Octavia's exactly.
import { statfs } from 'node:fs/promises';
import { cpus, hostname } from 'node:os';
import { run } from '../system/exec.js';
import { meminfo, procFile } from './amphora-facts.js';

export interface DetailsInput {
  haproxyVersion: string;
  keepalivedVersion: string;
  ipvsadmVersion: string;
  netns: string | null;
  haproxyCount: number;
  listeners: string[];
  lvsListenerProcessCount: number;
}

/** tx/rx byte counters of the eth* links in the amphora namespace. */
async function networks(netns: string | null): Promise<Record<string, { network_tx: number; network_rx: number }>> {
  const res = await run(['ip', ...(netns ? ['-n', netns] : []), '-s', '-j', 'link', 'show']);
  if (res.exitCode !== 0) return {};
  const out: Record<string, { network_tx: number; network_rx: number }> = {};
  try {
    for (const link of JSON.parse(res.stdout) as { ifname: string; stats64?: { rx: { bytes: number }; tx: { bytes: number } } }[]) {
      if (!link.ifname.startsWith('eth')) continue;
      out[link.ifname] = { network_tx: link.stats64?.tx.bytes ?? 0, network_rx: link.stats64?.rx.bytes ?? 0 };
    }
  } catch {
    return {};
  }
  return out;
}

export async function collectDetails(input: DetailsInput): Promise<Record<string, unknown>> {
  const [stat, mem, load, tuned, fs, nets] = await Promise.all([
    procFile('/proc/stat'),
    procFile('/proc/meminfo'),
    procFile('/proc/loadavg'),
    procFile('/etc/tuned/active_profile'),
    statfs('/'),
    networks(input.netns),
  ]);
  const cpuFields = (stat.split('\n')[0] ?? '').trim().split(/\s+/).slice(1);
  const m = meminfo(mem);
  return {
    hostname: hostname(),
    haproxy_version: input.haproxyVersion,
    api_version: '1.0',
    networks: nets,
    active: true,
    haproxy_count: input.haproxyCount,
    cpu_count: cpus().length,
    cpu: {
      total: cpuFields.reduce((sum, v) => sum + Number(v), 0),
      user: cpuFields[0] ?? '0',
      system: cpuFields[2] ?? '0',
      soft_irq: cpuFields[6] ?? '0',
    },
    memory: {
      total: m.MemTotal ?? 0,
      free: m.MemFree ?? 0,
      buffers: m.Buffers ?? 0,
      cached: m.Cached ?? 0,
      swap_used: m.SwapCached ?? 0,
      shared: m.Shmem ?? 0,
      slab: m.Slab ?? 0,
    },
    disk: {
      used: (fs.blocks - fs.bfree) * fs.bsize,
      available: fs.bavail * fs.bsize,
    },
    load: load.trim().split(/\s+/).slice(0, 3),
    active_tuned_profiles: tuned.slice(0, 1024).trim(),
    topology: 'SINGLE',
    topology_status: 'OK',
    listeners: input.listeners,
    packages: {},
    lvs_listener_process_count: input.lvsListenerProcessCount,
    keepalived_version: input.keepalivedVersion,
    ipvsadm_version: input.ipvsadmVersion,
  };
}
