// API 1.0's domain: the objects Octavia's controller uploads and then starts,
// stops, reloads and deletes by id. An id names a load balancer (its
// haproxy config) or an LVS (UDP/SCTP) listener (its keepalived config), as
// in Octavia's agent; each method here does one such request's work, and
// the router only turns its result or typed error into HTTP.
import type { ConfigStore } from '../config/store.js';
import type { HaproxyEngine } from '../haproxy/apply/engine.js';
import { judgeHaproxyConfig } from '../haproxy/config/policy/judge.js';
import { readAmphoraFacts } from '../info/amphora-facts.js';
import { readPolicyExtension } from '../haproxy/config/policy/haproxy-allowed-extension.js';
import { PolicyRefusedError, type PolicyContext } from '../haproxy/config/policy/types.js';
import { statsSocket } from '../config/layout.js';
import { keepalivedPid, keepalivedSettings, reloadKeepalived, startKeepalived, stopKeepalived, type KeepalivedSettings } from '../keepalived/process.js';
import { lvsExists, lvsInstance, removeLvs, vrrpInstance } from '../keepalived/service.js';
import type { Logger } from '../log.js';
import { afterLvsStart } from './announce.js';
import { removeCertificates } from './certificates.js';
import type { ApplyMetrics } from './metrics.js';
import type { ApplyOutcome } from '../outcome.js';
import { recordedApply } from './recorded-apply.js';

export type ObjectAction = 'start' | 'stop' | 'reload';
/** What keepalived does for an LVS listener's action: a reload is a restart, as in Octavia. */
export type LvsAction = 'start' | 'stop' | 'restart';

export const lvsActionOf = (action: ObjectAction): LvsAction => (action === 'reload' ? 'restart' : action);

export interface V1ServiceDeps {
  engine: HaproxyEngine;
  config: ConfigStore;
  metrics: ApplyMetrics;
  log: Logger;
}

/** Octavia's agent strips `group` directives: the group comes from the user/group file. */
export function withoutGroupLines(config: string): string {
  return config.replace(/\s+group\s.+/g, '');
}

export class V1Service {
  constructor(private readonly deps: V1ServiceDeps) {}

  private get basePath(): string {
    return this.deps.config.current.haproxyAmphora.basePath;
  }

  keepalivedSettings(): KeepalivedSettings {
    return keepalivedSettings(this.deps.config.current, this.deps.engine.processManager);
  }

  /** The stats sockets of the load balancers, for the VRRP check script. */
  async lbSockets(): Promise<string[]> {
    return (await this.deps.engine.loadBalancerIds()).map((lb) => statsSocket(this.basePath, lb));
  }

  /**
   * Validate and store an uploaded haproxy config; it runs after the next
   * start or reload. Throws PolicyRefusedError (the agent's config policy,
   * unless [amphora_agent] config_policy is off) or InvalidConfigError.
   */
  async upload(lbId: string, amphoraId: string, config: string): Promise<void> {
    const text = withoutGroupLines(config);
    const c = this.deps.config.current;
    if (c.amphoraAgent.configPolicy) {
      const ctx: PolicyContext = {
        lbId,
        basePath: c.haproxyAmphora.basePath,
        baseCertDir: c.haproxyAmphora.baseCertDir,
        protectedFiles: [c.amphoraAgent.agentServerCert, c.amphoraAgent.agentServerCa, this.deps.config.path],
        // Read at each upload, as Octavia 19 reads /1.0/details just before it
        // renders: free memory moves with what runs (a few /proc reads, next to haproxy -c).
        amphora: await readAmphoraFacts(),
        allowExtension: c.amphoraAgent.configPolicyExtension === null ? undefined : readPolicyExtension(c.amphoraAgent.configPolicyExtension),
      };
      // The text as sent first, so line numbers are the controller's; then as
      // haproxy gets it, in case removing `group` words made a difference.
      const violations = await judgeHaproxyConfig(config, ctx);
      if (violations.length === 0 && text !== config) violations.push(...(await judgeHaproxyConfig(text, ctx)));
      if (violations.length > 0) {
        this.deps.log.warn({ lb: lbId, violations }, 'config policy refused an upload');
        throw new PolicyRefusedError(violations);
      }
    }
    return this.deps.engine.accept(lbId, amphoraId, text);
  }

  /** Which object an id names: a load balancer's haproxy, an LVS listener, or nothing. */
  async objectOf(id: string): Promise<'haproxy' | 'lvs' | null> {
    if (await this.deps.engine.exists(id)) return 'haproxy';
    return (await lvsExists(this.basePath, id)) ? 'lvs' : null;
  }

  async stopHaproxy(lbId: string): Promise<void> {
    await this.deps.engine.stop(lbId);
  }

  /**
   * reload: the runtime API for member-only changes, a reload otherwise;
   * start: a load only when haproxy does not run. Counted in the metrics.
   */
  async applyHaproxy(lbId: string, action: 'start' | 'reload'): Promise<ApplyOutcome> {
    const { outcome } = await recordedApply(this.deps, '1.0', async () => ({
      outcome: action === 'reload' ? (await this.deps.engine.runAccepted(lbId)).outcome : ((await this.deps.engine.start(lbId))?.outcome ?? 'unchanged'),
    }));
    return outcome;
  }

  /** The VRRP keepalived; start on a running one is a reload, as Octavia's agent does. Throws KeepalivedFailedError. */
  async vrrpAction(action: ObjectAction): Promise<void> {
    const inst = vrrpInstance(this.basePath);
    const s = this.keepalivedSettings();
    if (action === 'stop') await stopKeepalived(inst, s);
    else if (action === 'reload' || (await keepalivedPid(inst))) await reloadKeepalived(inst, s);
    else await startKeepalived(inst, s);
  }

  /** Throws KeepalivedFailedError. */
  async lvsAction(listenerId: string, action: LvsAction): Promise<void> {
    const inst = lvsInstance(this.basePath, listenerId);
    const s = this.keepalivedSettings();
    if (action !== 'start') await stopKeepalived(inst, s);
    if (action !== 'stop') {
      await startKeepalived(inst, s);
      await afterLvsStart(this.deps, listenerId);
    }
  }

  /** After a successful LVS (re)start: IPVS settings and address announcements. */
  afterLvsStart(listenerId: string): Promise<void> {
    return afterLvsStart(this.deps, listenerId);
  }

  /** Stop and remove a load balancer with its certificates. Throws HaproxyFailedError. */
  async removeHaproxy(lbId: string): Promise<void> {
    await this.deps.engine.delete(lbId);
    await removeCertificates(this.deps.config.current, lbId);
  }

  /** Stop and remove an LVS listener, if there is one. Throws KeepalivedFailedError. */
  async removeLvs(listenerId: string): Promise<void> {
    if (await lvsExists(this.basePath, listenerId)) await removeLvs(this.basePath, this.keepalivedSettings(), listenerId);
  }
}
