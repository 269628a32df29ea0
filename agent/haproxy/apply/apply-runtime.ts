// A plan's runtime steps carried out: the member commands go to haproxy's
// runtime API, and the files follow (accepted and live config, and the
// companions such as the spec), so the next reload, state dump included,
// keeps the members. Their data syncs while haproxy takes the commands; they
// are renamed into place once haproxy took them all, and discarded if it
// refused one or did not answer: the caller then reloads instead, for the
// reason returned. An API 2.0 member call leaves the config files to the
// caller (deferred-config.ts): only its companions and the marker that says
// the config is behind are written here. Which files: the caller says.
import type { Logger } from '../../log.js';
import { stageFiles, type FileContent } from '../../system/files.js';
import type { LoadBalancerFiles } from '../layout.js';
import { memberKey } from '../../model/names.js';
import { MasterCliError } from '../process/master-cli.js';
import type { PendingMembers } from './pending.js';
import type { RetiredMembers } from './retired.js';
import { stepName } from './plan.js';
import { RuntimeCommandError, type RuntimeApi, type RuntimeResult } from '../process/runtime-api.js';
import type { RuntimeStep } from './runtime-plan.js';

export interface ApplyRuntimeDeps {
  lbId: string;
  runtime: RuntimeApi;
  pending: PendingMembers;
  retired: RetiredMembers;
  log: Logger;
}

/** The accepted and live config files of a change: one text (one write, two names) unless this haproxy needs its own syntax. */
export function configFiles(files: LoadBalancerFiles, change: { text: string; runnable: string }): FileContent[] {
  return change.runnable === change.text
    ? [{ path: [files.config, files.live], data: change.text }]
    : [
        { path: files.config, data: change.text },
        { path: files.live, data: change.runnable },
      ];
}

/** How runtime steps ended: haproxy took them all (`files` written), or refused one or did not answer (nothing written). */
export type RuntimeChange =
  /** The members now pending ("backend/server"). */
  | { kind: 'applied'; pending: string[] }
  /** Why haproxy could not take the steps: the caller reloads for it. */
  | { kind: 'refused'; reason: string };

export async function changeAtRuntime(deps: ApplyRuntimeDeps, files: FileContent[], steps: RuntimeStep[]): Promise<RuntimeChange> {
  const { lbId, log } = deps;
  let result: RuntimeResult;
  try {
    result = await commandsWithFiles(deps, files, steps);
  } catch (err) {
    if (err instanceof MasterCliError) {
      log.warn({ lbId, err: err.message }, 'runtime API unreachable; loading instead');
      return { kind: 'refused', reason: `haproxy's runtime API did not answer: ${err.message}` };
    }
    if (!(err instanceof RuntimeCommandError)) throw err;
    log.warn({ lbId, err: err.message }, 'runtime change refused by haproxy; reloading instead');
    return { kind: 'refused', reason: `haproxy refused a runtime command: ${err.message}` };
  }
  await deps.pending.afterRuntime(lbId, result);
  await deps.retired.add(lbId, result.retired);
  const pending = result.pending.map((p) => memberKey(p.backend, p.server));
  log.info({ lbId, steps: steps.map(stepName), pending }, 'members changed at runtime');
  return { kind: 'applied', pending };
}

async function commandsWithFiles(deps: ApplyRuntimeDeps, files: FileContent[], steps: RuntimeStep[]): Promise<RuntimeResult> {
  const staging = stageFiles(files);
  staging.catch(() => undefined); // its failure is handled below, not an unhandled rejection meanwhile
  let result: RuntimeResult;
  try {
    result = await deps.runtime.apply(steps);
  } catch (err) {
    (await staging.catch(() => null))?.discard();
    throw err;
  }
  (await staging).commit();
  return result;
}
