// What the agent's base directory holds for haproxy: which load balancers
// have a directory and an accepted config, the accepted text, and the
// amphora it was accepted for (its -L peer name). Reads only; the engine
// writes, under its lock.
import { readdir } from 'node:fs/promises';
import { exists, readTextIfExists } from '../system/files.js';
import { LoadBalancerNotFoundError } from './errors.js';
import { loadBalancerFiles, peerName, type LoadBalancerFiles } from './layout.js';
import type { HaproxyInstance } from './process.js';

export class StoredLoadBalancers {
  constructor(private readonly baseDir: string) {}

  files(lbId: string): LoadBalancerFiles {
    return loadBalancerFiles(this.baseDir, lbId);
  }

  /** The load balancers' directories under the base directory. */
  async directories(): Promise<string[]> {
    const entries = await readdir(this.baseDir, { withFileTypes: true }).catch(() => []);
    return entries.filter((e) => e.isDirectory() && !e.name.startsWith('.')).map((e) => e.name);
  }

  /** Load balancers with an accepted config, sorted by id. */
  async ids(): Promise<string[]> {
    const ids: string[] = [];
    for (const name of await this.directories()) if (await exists(this.files(name).config)) ids.push(name);
    return ids.sort();
  }

  /** The accepted config as stored, or null. */
  acceptedConfig(lbId: string): Promise<string | null> {
    return readTextIfExists(this.files(lbId).config);
  }

  /** The accepted config and the amphora it was accepted for. Throws LoadBalancerNotFoundError. */
  async accepted(lbId: string): Promise<{ text: string; amphoraId: string }> {
    const text = await this.acceptedConfig(lbId);
    if (text === null) throw new LoadBalancerNotFoundError(lbId);
    return { text, amphoraId: await this.amphoraIdOf(lbId) };
  }

  instance(lbId: string, amphoraId: string): HaproxyInstance {
    return { lbId, files: this.files(lbId), peerName: peerName(amphoraId) };
  }

  /** The instance with the amphora id it was last accepted for. */
  async storedInstance(lbId: string): Promise<HaproxyInstance> {
    return this.instance(lbId, await this.amphoraIdOf(lbId));
  }

  private async amphoraIdOf(lbId: string): Promise<string> {
    const meta = await readTextIfExists(this.files(lbId).meta);
    return meta ? (JSON.parse(meta) as { amphoraId: string }).amphoraId : lbId;
  }
}
