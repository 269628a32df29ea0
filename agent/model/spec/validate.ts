// Spec validation: the JSON Schema first (types, ranges, enumerations, safe
// characters), then the rules that tie objects together (unique ids,
// references, which protocol goes with which). Each failure names the exact
// field, e.g. `listeners[2].default_pool.members[7].weight: must be <= 256`.
// This module runs the schema; the rules between objects are relations.ts,
// the rules within one listener or pool object-rules.ts.
import type { ErrorObject, ValidateFunction } from 'ajv';
import { LOAD_BALANCER_SCHEMA, MEMBER_SCHEMA } from './schema.js';
import type { LoadBalancerSpec, MemberSpec, PoolSpec } from './types.js';
import { relationProblems } from './relations.js';
import { AgentError } from '../../errors.js';
import { lazyRequire } from '../../lazy-require.js';

export class SpecError extends AgentError {
  readonly kind = 'invalid_input';

  constructor(readonly problems: string[]) {
    super(problems.join('; '));
    this.name = 'SpecError';
  }
}

const ajvModule = lazyRequire<typeof import('ajv')>('ajv');
const ajvFormats = lazyRequire<{ default: (ajv: InstanceType<typeof import('ajv').Ajv>) => void }>('ajv-formats');
let compiled: { spec: ValidateFunction; member: ValidateFunction } | null = null;

/**
 * The schema checks, compiled on first use: loading ajv and compiling the
 * schema is most of what the agent's start would cost otherwise, and only
 * API 2.0 and the render/check commands validate specs.
 */
function checks(): { spec: ValidateFunction; member: ValidateFunction } {
  if (compiled) return compiled;
  const ajv = new (ajvModule().Ajv)({ allErrors: true, useDefaults: true, strict: true, allowUnionTypes: true, verbose: true });
  ajvFormats().default(ajv);
  compiled = { spec: ajv.compile(LOAD_BALANCER_SCHEMA), member: ajv.compile(MEMBER_SCHEMA) };
  return compiled;
}

/**
 * Validate a parsed JSON document; returns it typed. Throws SpecError.
 * Defaults are filled into the document itself: callers hand over a freshly
 * parsed one (a copy would cost about as much as the schema check).
 */
export function validateSpec(doc: unknown): LoadBalancerSpec {
  const check = checks().spec;
  if (!check(doc)) throw new SpecError(schemaProblems(check.errors ?? []));
  const spec = doc as LoadBalancerSpec;
  const problems = relationProblems(spec);
  if (problems.length > 0) throw new SpecError(problems);
  return spec;
}

/**
 * One member for `pool` (API 2.0's member calls): the member schema, then
 * the pool's rules for members (one member per id, one per address and
 * port). Its id may be left out: it is the path's. Throws SpecError.
 */
export function validateMember(doc: unknown, memberId: string, pool: PoolSpec): MemberSpec {
  if (doc !== null && typeof doc === 'object' && !Array.isArray(doc) && !('id' in doc)) (doc as { id?: string }).id = memberId;
  const check = checks().member;
  if (!check(doc)) throw new SpecError(schemaProblems(check.errors ?? []));
  const m = doc as MemberSpec;
  if (m.id !== memberId) throw new SpecError([`id: "${m.id}" is not the member in the path ("${memberId}")`]);
  const same = pool.members.find((o) => o.id !== m.id && o.address === m.address && o.protocol_port === m.protocol_port);
  if (same) throw new SpecError([`${m.address} port ${m.protocol_port} is already member "${same.id}" of pool ${pool.id}`]);
  return m;
}

/** `/listeners/2/default_pool` -> `listeners[2].default_pool`. */
export function fieldPath(pointer: string): string {
  let out = '';
  for (const part of pointer.split('/').slice(1)) {
    const key = part.replace(/~1/g, '/').replace(/~0/g, '~');
    out += /^\d+$/.test(key) ? `[${key}]` : out === '' ? key : `.${key}`;
  }
  return out;
}

function joinPath(base: string, key: string): string {
  return base === '' ? key : `${base}.${key}`;
}

function schemaProblems(errors: ErrorObject[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  // anyOf reports every branch; its own summary line ("must match a schema in
  // anyOf") says enough, so the branch details are dropped.
  const anyOfPaths = new Set(errors.filter((e) => e.keyword === 'anyOf').map((e) => e.instancePath));
  for (const e of errors) {
    if (e.keyword !== 'anyOf' && anyOfPaths.has(e.instancePath) && e.schemaPath.includes('/anyOf/')) continue;
    const path = fieldPath(e.instancePath);
    let line: string;
    switch (e.keyword) {
      case 'required':
        line = `${joinPath(path, String(e.params.missingProperty))}: is required`;
        break;
      case 'additionalProperties':
        line = `${joinPath(path, String(e.params.additionalProperty))}: is not a known field`;
        break;
      case 'propertyNames':
        continue; // reported with the offending name by the 'enum' error below
      case 'enum':
        line =
          e.propertyName !== undefined
            ? `${joinPath(path, e.propertyName)}: is not a known field`
            : `${path}: must be one of ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
        break;
      case 'anyOf':
        line = JSON.stringify(e.schema).includes('ipv4')
          ? `${path}: must be an IPv4 or IPv6 address`
          : `${path}: must be true or false (a boolean or the string)`;
        break;
      case 'pattern':
        line = `${path}: contains characters or a form that is not allowed (must match ${e.params.pattern})`;
        break;
      default:
        line = `${path || '(document)'}: ${e.message ?? 'is invalid'}`;
    }
    if (!seen.has(line)) {
      seen.add(line);
      out.push(line);
    }
  }
  return out;
}
