// The vocabulary shared by the agent's config policies: what a judged config
// is checked against (the load balancer's directories, the amphora's facts)
// and what a refusal says (the line, the directive, the reason).
import { AgentError } from '../../../errors.js';
import type { AmphoraFacts } from '../../../render/settings.js';
import type { AllowList } from './haproxy-allowed.js';

export interface PolicyContext {
  lbId: string;
  /** [haproxy_amphora] base_path: the load balancer's files are in <base_path>/<lb_id>/. */
  basePath: string;
  /** [haproxy_amphora] base_cert_dir: its certificates are in <base_cert_dir>/<lb_id>/. */
  baseCertDir: string;
  /** Files no config may name even inside those directories (the agent's certificate, CA, configuration). */
  protectedFiles: string[];
  /** The amphora's CPU count and memory, which bound what haproxy reserves when it starts (bounds.ts). */
  amphora?: AmphoraFacts;
  /** The operator's additions to the allow-list ([amphora_agent] config_policy_extension, haproxy-allowed-extension.ts). */
  allowExtension?: AllowList;
}

export interface PolicyViolation {
  /** 1-based line number in the text checked. */
  line: number;
  /** The directive as written, e.g. `errorfile`, `stats socket`, `program`. */
  directive: string;
  reason: string;
}

/** A file a config names, checked on disk (files.ts) after the text passed. */
export interface FileReference {
  /** 1-based line number in the text checked. */
  line: number;
  directive: string;
  path: string;
  /** certificate: a PEM bundle (crt, ca-file, crl-file...); crt-list: a list whose entries are certificates; file: anything else. */
  kind: 'certificate' | 'crt-list' | 'file';
}

/** A config the policy refuses; API 1.0 answers it with Octavia's 400 shape. */
export class PolicyRefusedError extends AgentError {
  readonly kind = 'invalid_input';

  constructor(readonly violations: PolicyViolation[]) {
    super(`the agent's config policy refuses the configuration:\n${formatViolations(violations)}`);
  }
}

export function formatViolations(violations: PolicyViolation[]): string {
  return violations.map((v) => `line ${v.line}: ${v.directive}: ${v.reason}`).join('\n');
}
