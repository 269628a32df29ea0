// What the agent's base directory holds for haproxy: which load balancers
// have a directory and an accepted config, the accepted text, and the
// amphora it was accepted for (its -L peer name). The engine writes, under
// its lock, and tells this what it wrote (remember), so an accepted config
// is read from disk once: a member call on a 5,000-member load balancer
// would otherwise read 350 kB to change one line.
import { readdir } from 'node:fs/promises';
import { exists, readTextIfExists } from '../system/files.js';
import { LoadBalancerNotFoundError } from './errors.js';
import { loadBalancerFiles, peerName, type LoadBalancerFiles } from './layout.js';
import type { HaproxyInstance } from './process.js';

export class StoredLoadBalancers {
  private readonly acceptedTexts = new Map<string, string | null>();

  constructor(private readonly baseDir: string) {}

  /** The engine wrote (or removed, null) the accepted config. */
  remember(lbId: string, text: string | null): void {
    this.acceptedTexts.set(lbId, text);
  }

  /** A write may or may not have happened (it failed): read it again next time. */
  forget(lbId: string): void {
    this.acceptedTexts.delete(lbId);
  }

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
  async acceptedConfig(lbId: string): Promise<string | null> {
    if (!this.acceptedTexts.has(lbId)) this.acceptedTexts.set(lbId, await readTextIfExists(this.files(lbId).config));
    return this.acceptedTexts.get(lbId)!;
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
