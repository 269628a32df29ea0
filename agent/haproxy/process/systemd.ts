// systemd back end, as on a production amphora: one haproxy-<lb>.service per
// load balancer (the name Octavia uses). Start, reload and stop go through
// systemctl so systemd tracks the service; success is verified on the master CLI.
import { join } from 'node:path';
import { renderTemplate } from '../../templates.js';
import { run } from '../../system/exec.js';
import { readTextIfExists, writeFileAtomic } from '../../system/files.js';
import { HaproxyFailedError } from '../errors.js';
import { parseUnitState, UNIT_PROPERTIES, type UnitState } from './systemd-unit.js';
import { readStatus, waitForFirstWorker, waitForReload, type HaproxyInstance, type HaproxyStatus, type HaproxySupervisor } from './process.js';

/** A status question must not hold /status or a metrics scrape: systemd answers in milliseconds when it answers at all. */
const SHOW_TIMEOUT_MS = 5000;

/** systemctl's words for a reload of a unit that is not running (systemd's BUS_ERROR_UNIT_INACTIVE). */
const UNIT_INACTIVE = /is not active, cannot reload/;

export class SystemdSupervisor implements HaproxySupervisor {
  readonly kind = 'systemd';

  constructor(
    private readonly haproxyCommand: string[],
    private readonly netns: string,
    private readonly userGroupFile: string,
    private readonly unitDir: string,
  ) {}

  private unitName(inst: HaproxyInstance): string {
    return `haproxy-${inst.lbId}.service`;
  }

  /** (Re)write the unit when its content changed (for example a new peer name). */
  private async installUnit(inst: HaproxyInstance): Promise<void> {
    const path = join(this.unitDir, this.unitName(inst));
    const unit = renderTemplate('systemd/haproxy.service.njk', {
      lb_id: inst.lbId,
      config: inst.files.live,
      user_group: this.userGroupFile,
      pid_file: inst.files.pidFile,
      netns: this.netns,
      haproxy: this.haproxyCommand.join(' '),
      master_socket: inst.files.masterSocket,
      peer_name: inst.peerName,
    });
    if ((await readTextIfExists(path)) === unit) return;
    await writeFileAtomic(path, unit, 0o644);
    await this.systemctl('daemon-reload', null);
    await this.systemctl('enable', this.unitName(inst));
  }

  private async systemctl(verb: string, unit: string | null): Promise<void> {
    const res = await run(['systemctl', verb, ...(unit ? [unit] : [])]);
    if (res.exitCode !== 0) throw new HaproxyFailedError(verb, res.output.trim());
  }

  async start(inst: HaproxyInstance): Promise<HaproxyStatus> {
    await this.installUnit(inst);
    // A start on request is allowed again after the unit hit its start limit
    // (failed): the controller or operator asks for it, not a crash loop.
    await run(['systemctl', 'reset-failed', this.unitName(inst)], { timeoutMs: SHOW_TIMEOUT_MS });
    try {
      await this.systemctl('start', this.unitName(inst));
      return await waitForFirstWorker(inst.files, 'start');
    } catch (err) {
      // A refused start is an answer, not a crash: left alone, Restart=always
      // would start the unit again and again on the config the agent now
      // withdraws (seen in the Octavia box: "Cannot open configuration file").
      await run(['systemctl', 'stop', this.unitName(inst)], { timeoutMs: SHOW_TIMEOUT_MS });
      throw err;
    }
  }

  async reload(inst: HaproxyInstance, before: HaproxyStatus): Promise<HaproxyStatus> {
    await this.installUnit(inst);
    try {
      await this.systemctl('reload', this.unitName(inst));
    } catch (err) {
      // The unit went inactive since the status was read: haproxy died and
      // systemd is about to restart it (Restart=always), or it was stopped
      // (Octavia bug 2054666). Starting it is what the reload was for: the new
      // haproxy reads the live config and the server-state file just written.
      if (!(err instanceof HaproxyFailedError && UNIT_INACTIVE.test(err.output))) throw err;
      await this.systemctl('start', this.unitName(inst));
      return waitForFirstWorker(inst.files, 'reload');
    }
    return waitForReload(inst.files, before, '');
  }

  async stop(inst: HaproxyInstance): Promise<void> {
    await this.systemctl('stop', this.unitName(inst));
  }

  status(inst: HaproxyInstance): Promise<HaproxyStatus> {
    return readStatus(inst.files);
  }

  async unitState(inst: HaproxyInstance): Promise<UnitState> {
    const name = this.unitName(inst);
    const res = await run(['systemctl', 'show', ...UNIT_PROPERTIES.flatMap((p) => ['-p', p]), name], { timeoutMs: SHOW_TIMEOUT_MS });
    return parseUnitState(name, res.exitCode === 0 ? res.stdout : '');
  }
}
