// What the agent keeps in memory about one load balancer's haproxy, in one
// object per id, so forgetting is one call: states.delete(id) when the load
// balancer goes, state.invalidate() when a write may or may not have
// happened, state.stopped() when haproxy was stopped on purpose. All of it is
// rebuilt from the files (or starts empty) after an agent restart: the files
// stay the truth, this saves reading them again. A member call on a 5,000-member
// load balancer would otherwise read its 350 kB config to change one line.
//
// The engine changes a state under the load balancer's lock (engine.ts),
// except the restart delays, which only the watchdog keeps. The lock is not
// kept here: operations queued behind a delete wait for it, then find a new
// state.
import { readdir } from 'node:fs/promises';
import { exists, readTextIfExists } from '../../system/files.js';
import { readConfig, type ConfigInfo } from '../config/config-reader.js';
import { DeferredConfig } from './deferred-config.js';
import { EditedConfig } from '../config/edited-config.js';
import { LoadBalancerNotFoundError } from '../errors.js';
import { loadBalancerFiles, type LoadBalancerFiles } from '../layout.js';
import { peerName } from '../../model/names.js';
import type { HaproxyInstance } from '../process/process.js';
import { RestartBackoff, type RestartPolicy } from '../process/restart-backoff.js';

/** The accepted config as read while haproxy -c checked it: the load that follows reads no config of its own. */
export interface Reading {
  runnable: string;
  config: ConfigInfo;
}

export interface StateOptions {
  /** Called when a load balancer's held config is due to be written (deferred-config.ts). */
  heldConfigDue: (lbId: string) => void;
  heldConfigDelayMs?: number;
  restartPolicy?: RestartPolicy;
}

export class LoadBalancerState {
  /** The accepted config as stored (null: none); undefined until read from disk. */
  private stored: string | null | undefined;
  /** The accepted config haproxy runs, as this process last applied or loaded it; null when not known. */
  private running: string | null = null;
  /** Taken by the next load (API 1.0's upload, then reload). */
  private reading: Reading | null = null;
  /** The bind addresses of the config this process last loaded; null when it loaded none. */
  private binds: string[] | null = null;
  /** The last API 2.0 config found to load as it is (no runnable.ts rewrite); null when none. */
  asIs: string | null = null;
  /** Members wait for their first passing check (pending.ts keeps them in pending-ready.json). */
  pending = false;
  /** Members removed at runtime wait to be deleted (retired.ts keeps them in retired.json). */
  retired = false;
  /** A member call's config, held until written (deferred-config.ts). */
  readonly deferred: DeferredConfig;
  /** The direct supervisor's restart delays (watchdog.ts). */
  readonly restarts: RestartBackoff;

  constructor(
    readonly lbId: string,
    readonly files: LoadBalancerFiles,
    opts: StateOptions,
  ) {
    this.deferred = new DeferredConfig(() => opts.heldConfigDue(lbId), opts.heldConfigDelayMs);
    this.restarts = new RestartBackoff(opts.restartPolicy);
  }

  /** A write may or may not have happened (it failed): the accepted config is read from disk again. */
  invalidate(): void {
    this.stored = undefined;
  }

  /** haproxy was stopped on purpose: what it ran and its restart troubles no longer count. */
  stopped(): void {
    this.running = null;
    this.restarts.forget();
  }

  /** The engine wrote the accepted config (null: removed it). */
  remember(text: string | null): void {
    this.stored = text;
  }

  /** haproxy -c validated `text`, now the accepted config; `reading`: the config as read meanwhile. */
  validated(text: string, reading: Reading | null): void {
    this.stored = text;
    this.reading = reading;
  }

  /** The reading of the last accepted config, once: a reading is for the load right after it. */
  takeReading(): Reading | null {
    const reading = this.reading;
    this.reading = null;
    return reading;
  }

  /** haproxy now runs `text` (the accepted config). */
  ran(text: string): void {
    this.running = text;
  }

  /** haproxy loaded `text`, binding `binds`. */
  loaded(text: string, binds: string[]): void {
    this.running = text;
    this.binds = binds;
  }

  /** Whether haproxy runs `text`, as this process last applied or loaded it. */
  runs(text: string): boolean {
    return this.running === text;
  }

  /**
   * Write the config member calls hold (the caller holds the lock). haproxy
   * runs what they held, as it is: the text written is now the accepted,
   * applied and as-is config.
   */
  async writeHeld(): Promise<void> {
    const text = await this.deferred.write();
    if (text === null) return;
    this.stored = text;
    this.running = text;
    this.asIs = text;
  }

  /** The accepted config as stored, or null. */
  async storedConfig(): Promise<string | null> {
    if (this.stored === undefined) this.stored = await readTextIfExists(this.files.config);
    return this.stored;
  }

  /**
   * The addresses haproxy binds: those of the config this process last
   * loaded (a member change binds nothing new), else read from the accepted
   * config.
   */
  async bindAddresses(): Promise<string[]> {
    return this.binds ?? readConfig((await this.acceptedConfig()) ?? '').frontends.flatMap((f) => f.bindAddresses);
  }

  /** The accepted config (held by a member call, or as stored), or null. */
  async acceptedConfig(): Promise<string | null> {
    return this.deferred.config?.text ?? this.storedConfig();
  }

  /** The accepted config for a member call to edit: what earlier calls hold, or as stored; null when none. */
  async memberBase(): Promise<EditedConfig | null> {
    const held = this.deferred.config;
    if (held) return held;
    const text = await this.storedConfig();
    return text === null ? null : EditedConfig.of(text);
  }

  /** The stored accepted config and the amphora it was accepted for. Throws LoadBalancerNotFoundError. */
  async accepted(): Promise<{ text: string; amphoraId: string }> {
    const text = await this.storedConfig();
    if (text === null) throw new LoadBalancerNotFoundError(this.lbId);
    return { text, amphoraId: await this.amphoraId() };
  }

  instance(amphoraId: string): HaproxyInstance {
    return { lbId: this.lbId, files: this.files, peerName: peerName(amphoraId) };
  }

  /** The instance with the amphora id it was last accepted for. */
  async storedInstance(): Promise<HaproxyInstance> {
    return this.instance(await this.amphoraId());
  }

  private async amphoraId(): Promise<string> {
    const meta = await readTextIfExists(this.files.meta);
    return meta ? (JSON.parse(meta) as { amphoraId: string }).amphoraId : this.lbId;
  }
}

/** The states of the load balancers under the agent's base directory, and which of those the directory holds. */
export class LoadBalancerStates {
  private readonly states = new Map<string, LoadBalancerState>();

  constructor(
    private readonly baseDir: string,
    private readonly opts: StateOptions,
  ) {}

  files(lbId: string): LoadBalancerFiles {
    return loadBalancerFiles(this.baseDir, lbId);
  }

  /** The state of `lbId`, new (nothing known) the first time. */
  get(lbId: string): LoadBalancerState {
    let state = this.states.get(lbId);
    if (!state) {
      state = new LoadBalancerState(lbId, this.files(lbId), this.opts);
      this.states.set(lbId, state);
    }
    return state;
  }

  /** The state of `lbId` if one is kept. */
  peek(lbId: string): LoadBalancerState | undefined {
    return this.states.get(lbId);
  }

  /** Forget everything about `lbId`, its held config included. */
  delete(lbId: string): void {
    this.states.get(lbId)?.deferred.drop();
    this.states.delete(lbId);
  }

  /** Load balancers whose state says `yes`. */
  where(yes: (state: LoadBalancerState) => boolean): string[] {
    return [...this.states.values()].filter(yes).map((s) => s.lbId);
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
}
