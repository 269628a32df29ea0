// An amphora's config drive as Nova builds it from what Octavia's controller
// asks for: Octavia's own compute task (test/interop/octavia_compute_create.py)
// says which files and which user data, and writeNovaConfigDrive lays them out
// as Nova's config drive does (openstack/latest/meta_data.json with "files"
// pointing into openstack/content/, user_data, network_data.json), the tree
// that `genisoimage -V config-2` turns into the drive cloud-init's ConfigDrive
// datasource reads.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { octaviaPython, type OctaviaUnderTest } from './haproxies.js';

const SCRIPT = fileURLToPath(new URL('../../../test/interop/octavia_compute_create.py', import.meta.url));

/** The keyword arguments Octavia's compute task gives the compute driver's build(). */
export interface ComputeBuild {
  name: string;
  key_name: string;
  network_ids: string[];
  /** Path -> content, or null when [controller_worker] user_data_config_drive puts them in the user data. */
  config_drive_files: Record<string, string> | null;
  user_data: string;
  /** The user data's write_files as cloud-init's YAML parser reads them. */
  user_data_files: Record<string, string>;
  user_data_runcmd: string[];
}

export interface ComputeCreateInput {
  amphoraId: string;
  serverPem: string;
  clientCa: string;
  /** oslo.config overrides, by group. */
  overrides: Record<string, Record<string, unknown>>;
}

/** Run a release's CertComputeCreate with the noop compute driver; what it would hand Nova. */
export function octaviaComputeCreate(release: OctaviaUnderTest, input: ComputeCreateInput): Promise<ComputeBuild> {
  const [cmd, args] = octaviaPython(release, SCRIPT);
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      err += d;
    });
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`octavia_compute_create.py (${release.label}) exited ${code}:\n${err}`));
      try {
        resolve(JSON.parse(out) as ComputeBuild);
      } catch (e) {
        reject(new Error(`octavia_compute_create.py (${release.label}): ${(e as Error).message}\n${out}\n${err}`));
      }
    });
    child.stdin.end(JSON.stringify({ amphora_id: input.amphoraId, server_pem: input.serverPem, client_ca: input.clientCa, overrides: input.overrides }));
  });
}

export interface NovaInstance {
  uuid: string;
  /** The management port's MAC (network_data.json's link). */
  mac: string;
  networkId: string;
  /** The public key of the key pair named by build.key_name (Octavia's amp_ssh_key_name), if any. */
  publicKey?: string;
}

/**
 * Lay out Nova's config drive for a build in `dir` (its root becomes the ISO's
 * root). Files are numbered in the order given, as Nova's InstanceMetadata
 * numbers injected files (`/content/0000`, ...).
 */
export function writeNovaConfigDrive(dir: string, build: ComputeBuild, instance: NovaInstance): void {
  const latest = join(dir, 'openstack', 'latest');
  const content = join(dir, 'openstack', 'content');
  mkdirSync(latest, { recursive: true });
  mkdirSync(content, { recursive: true });
  const files = Object.entries(build.config_drive_files ?? {}).map(([path, text], i) => {
    const key = String(i).padStart(4, '0');
    writeFileSync(join(content, key), text);
    return { path, content_path: `/content/${key}` };
  });
  const hostname = build.name;
  const meta: Record<string, unknown> = {
    uuid: instance.uuid,
    meta: {},
    hostname,
    name: build.name,
    launch_index: 0,
    availability_zone: 'nova',
    project_id: '00000000000000000000000000000001',
    devices: [],
  };
  if (build.key_name && instance.publicKey) {
    meta.public_keys = { [build.key_name]: instance.publicKey };
    meta.keys = [{ name: build.key_name, type: 'ssh', data: instance.publicKey }];
  }
  if (files.length > 0) meta.files = files;
  writeFileSync(join(latest, 'meta_data.json'), JSON.stringify(meta));
  writeFileSync(join(latest, 'user_data'), build.user_data);
  const link = `tap${instance.uuid.slice(0, 11)}`;
  writeFileSync(
    join(latest, 'network_data.json'),
    JSON.stringify({
      links: [{ id: link, vif_id: instance.uuid, type: 'ovs', mtu: 1500, ethernet_mac_address: instance.mac }],
      networks: [{ id: 'network0', type: 'ipv4_dhcp', link, network_id: instance.networkId }],
      services: [],
    }),
  );
  writeFileSync(join(latest, 'vendor_data.json'), '{}');
  writeFileSync(join(latest, 'vendor_data2.json'), '{}');
}
