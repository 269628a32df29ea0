// `amphora-agent render SPEC.json` prints the configs a spec renders to;
// `amphora-agent check SPEC.json` also has the real haproxy (and keepalived,
// for UDP/SCTP listeners) judge them, in a scratch directory with the spec's
// certificate files, and prints their verdict.
import { copyFile, mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { certificateDir } from '../config/layout.js';
import { ConfigStore } from '../config/store.js';
import { DEFAULT_RENDER_SETTINGS, type RenderSettings, type RenderTarget } from '../render/settings.js';
import { renderLoadBalancer } from '../render/render.js';
import { validateSpec, SpecError } from '../model/spec/validate.js';
import type { LoadBalancerSpec } from '../model/spec/types.js';
import { initStateAtStartupByVersion } from '../model/admission.js';
import { haproxyCapabilities } from '../haproxy/process/capabilities.js';
import { peerName } from '../model/names.js';
import { certificateFiles } from '../loadbalancer/spec-store.js';
import { run } from '../system/exec.js';
import { readAmphoraFacts } from '../info/amphora-facts.js';
import { runWithScratchNetns } from '../system/netns.js';
import { ensureDir, removeTree, writeFileAtomic } from '../system/files.js';
import { UsageError } from './usage.js';

export { UsageError };

interface Options {
  specFile: string;
  haproxy: string[] | null;
  haproxyVersion: string | null;
  certDir: string | null;
  configFile: string | null;
}

function parseOptions(command: string, args: string[]): Options {
  const opts: Options = { specFile: '', haproxy: null, haproxyVersion: null, certDir: null, configFile: null };
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const value = () => {
      const v = args[++i];
      if (v === undefined) throw new UsageError(`${a} needs a value`);
      return v;
    };
    if (a === '--haproxy') opts.haproxy = value().split(' ').filter(Boolean);
    else if (a === '--haproxy-version' && command === 'render') opts.haproxyVersion = value();
    else if (a === '--cert-dir' && command === 'check') opts.certDir = value();
    else if (a === '--config-file') opts.configFile = value();
    else if (!a.startsWith('--') && opts.specFile === '') opts.specFile = a;
    else throw new UsageError(`unknown argument "${a}"`);
  }
  if (opts.specFile === '') throw new UsageError('a spec file is required ("-" reads stdin)');
  if (opts.haproxy && opts.haproxyVersion) throw new UsageError('give --haproxy or --haproxy-version, not both');
  if (opts.haproxyVersion !== null && !/^\d+\.\d+$/.test(opts.haproxyVersion)) throw new UsageError('--haproxy-version takes X.Y, e.g. 2.6');
  return opts;
}

async function loadSpec(file: string): Promise<LoadBalancerSpec> {
  const text = file === '-' ? await readStdin() : await readFile(file, 'utf8');
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new SpecError([`(document): not valid JSON: ${(err as Error).message}`]);
  }
  return validateSpec(doc);
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** What the target haproxy does with init-state: probed whenever a binary is available, a version is a guess. */
async function renderTarget(opts: Options, haproxyCmd: string[]): Promise<RenderTarget> {
  if (opts.haproxyVersion !== null) {
    const [major, minor] = opts.haproxyVersion.split('.').map(Number) as [number, number];
    return { initStateAtStartup: initStateAtStartupByVersion(major, minor) };
  }
  const work = await mkdtemp(join(tmpdir(), 'amphora-probe-'));
  try {
    const caps = await haproxyCapabilities(haproxyCmd, work);
    return { initStateAtStartup: caps.initStateAtStartup };
  } finally {
    await removeTree(work);
  }
}

/** Settings, haproxy command and whether to size haproxy from this machine (only an amphora's config says so). */
async function settingsFor(opts: Options): Promise<{ settings: RenderSettings; haproxyCmd: string[]; onAmphora: boolean }> {
  if (opts.configFile === null) return { settings: DEFAULT_RENDER_SETTINGS, haproxyCmd: opts.haproxy ?? ['haproxy'], onAmphora: false };
  const config = (await ConfigStore.load(opts.configFile)).current;
  return {
    settings: config.render,
    haproxyCmd: opts.haproxy ?? [config.haproxyAmphora.haproxyCmd],
    onAmphora: config.haproxyAmphora.tuneFromAmphoraDetails,
  };
}

async function withAmphoraFacts(target: RenderTarget, onAmphora: boolean): Promise<RenderTarget> {
  return onAmphora ? { ...target, amphora: await readAmphoraFacts() } : target;
}

export async function renderCommand(args: string[]): Promise<number> {
  const opts = parseOptions('render', args);
  const spec = await loadSpec(opts.specFile);
  const { settings, haproxyCmd, onAmphora } = await settingsFor(opts);
  const out = renderLoadBalancer(spec, settings, await withAmphoraFacts(await renderTarget(opts, haproxyCmd), onAmphora));
  if (out.haproxyConfig !== null) process.stdout.write(out.haproxyConfig);
  for (const lvs of out.lvsConfigs) process.stdout.write(`\n# ---- keepalived LVS config of listener ${lvs.listenerId} ----\n${lvs.content}`);
  return 0;
}

export interface Verdict {
  /** 'haproxy' or 'keepalived <listener id>'. */
  tool: string;
  ok: boolean;
  output: string;
}

/**
 * Render a spec into a scratch tree under `workRoot` (paths in the config point
 * there, the spec's certificates copied from `certSource`) and let haproxy
 * (`-c`) and keepalived (`-t`) judge the result. keepalived judges inside a
 * scratch namespace named as configured, as it would on an amphora.
 */
export async function checkSpec(
  spec: LoadBalancerSpec,
  settings: RenderSettings,
  target: RenderTarget,
  haproxyCmd: string[],
  certSource: string,
  workRoot = tmpdir(),
  keepalivedCmd = ['keepalived'],
): Promise<Verdict[]> {
  const work = await mkdtemp(join(workRoot, 'amphora-check-'));
  try {
    const scratch: RenderSettings = { ...settings, basePath: work, baseCertDir: join(work, 'certs') };
    const out = renderLoadBalancer(spec, scratch, target);
    const certDir = certificateDir(scratch.baseCertDir, spec.id);
    await ensureDir(certDir, 0o700);
    await copyCertificates(spec, certSource, certDir);
    for (const f of out.crtLists) await writeFileAtomic(f.path, f.content, 0o600);
    const verdicts: Verdict[] = [];
    if (out.haproxyConfig !== null) {
      const cfg = join(work, 'haproxy.cfg');
      await writeFileAtomic(cfg, out.haproxyConfig, 0o600);
      const peer = spec.amphorae[0] ? ['-L', peerName(spec.amphorae[0].id)] : [];
      const res = await run([...haproxyCmd, '-c', ...peer, '-f', cfg]);
      verdicts.push({ tool: 'haproxy', ok: res.exitCode === 0, output: res.output });
    }
    for (const lvs of out.lvsConfigs) {
      const cfg = join(work, `lvs-${lvs.listenerId}.cfg`);
      await writeFileAtomic(cfg, lvs.content, 0o600);
      const res = await runWithScratchNetns(scratch.networkNamespace, [...keepalivedCmd, '-t', '-f', cfg]);
      // keepalived's exit code 6 is only its script-security advice for root-run checks.
      const ok = res.exitCode === 0 || (res.exitCode === 6 && !/Unknown keyword|error/i.test(res.output));
      verdicts.push({ tool: `keepalived ${lvs.listenerId}`, ok, output: res.output });
    }
    return verdicts;
  } finally {
    await removeTree(work);
  }
}

export async function checkCommand(args: string[]): Promise<number> {
  const opts = parseOptions('check', args);
  const spec = await loadSpec(opts.specFile);
  const { settings, haproxyCmd, onAmphora } = await settingsFor(opts);
  const target = await withAmphoraFacts(await renderTarget(opts, haproxyCmd), onAmphora);
  const verdicts = await checkSpec(spec, settings, target, haproxyCmd, opts.certDir ?? certificateDir(settings.baseCertDir, spec.id));
  for (const v of verdicts) process.stdout.write(`${v.tool}: ${v.ok ? 'valid' : 'INVALID'}\n${indent(v.output)}`);
  return verdicts.every((v) => v.ok) ? 0 : 1;
}

async function copyCertificates(spec: LoadBalancerSpec, from: string, to: string): Promise<void> {
  for (const name of certificateFiles(spec)) {
    try {
      await copyFile(join(from, name), join(to, name));
    } catch {
      throw new UsageError(`certificate file ${join(from, name)} is missing (give --cert-dir)`);
    }
  }
}

function indent(text: string): string {
  const t = text.trim();
  return t === ''
    ? ''
    : `${t
        .split('\n')
        .map((l) => `  ${l}`)
        .join('\n')}\n`;
}
