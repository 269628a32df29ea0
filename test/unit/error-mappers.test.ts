// The HTTP contract of every error class, per API: status and body exactly as
// the integration and interop tests see them, pinned here without a server.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BadRequestError, InvalidCertificateError, InvalidRequestError, v1ErrorResponse } from '../../agent/api/v1/errors.js';
import { v2ErrorResponse } from '../../agent/api/v2/errors.js';
import { UsageError } from '../../agent/cli/render.js';
import { ConfigError } from '../../agent/config/agent-config.js';
import { ConfigNotStoredError } from '../../agent/config/store.js';
import { AgentError } from '../../agent/errors.js';
import { HaproxyFailedError, InvalidConfigError, LoadBalancerNotFoundError } from '../../agent/haproxy/errors.js';
import { MasterCliError } from '../../agent/haproxy/process/master-cli.js';
import { KeepalivedFailedError } from '../../agent/keepalived/process.js';
import { MissingCertificateError, ObjectNotFoundError, PreconditionFailedError, SpecMismatchError } from '../../agent/loadbalancer/v2-errors.js';
import { InterfaceError } from '../../agent/net/amphora-interface.js';
import { SysctlError } from '../../agent/net/ipvs-sysctls.js';
import { MasqueradeError } from '../../agent/net/masquerade.js';
import { NftablesError } from '../../agent/net/nftables.js';
import { InterfaceExistsError, InterfaceNotFoundError } from '../../agent/net/plug.js';
import { SpecError } from '../../agent/model/spec/validate.js';
import { PolicyRefusedError } from '../../agent/haproxy/config/policy/types.js';
import { StorageFullError } from '../../agent/system/files.js';

const haproxyFailed = new HaproxyFailedError('reload', 'x\n[ALERT] a\n[ALERT] b');
const keepalivedFailed = new KeepalivedFailedError('start', 'no ipvs\nbye');

/** One instance of every error class the agent throws. */
const EVERY_ERROR: AgentError[] = [
  new InvalidRequestError('Invalid VIP'),
  new InvalidRequestError('Invalid Request', 'Unknown action: jump'),
  new BadRequestError('Invalid subnet information'),
  new InvalidCertificateError('no certificate or no private key found'),
  new InvalidConfigError('[ALERT] parsing\n[ALERT] fatal'),
  new ConfigError('[amphora_agent] x: "y" is not a boolean'),
  new LoadBalancerNotFoundError('lb-1'),
  new InterfaceNotFoundError('No suitable network interface found'),
  new InterfaceExistsError('Interface already exists'),
  new ConfigNotStoredError('Error: EACCES'),
  haproxyFailed,
  keepalivedFailed,
  new InterfaceError('ip link: no'),
  new MasqueradeError('nft: no'),
  new NftablesError('no'),
  new SysctlError('sysctl: no'),
  new MasterCliError('master CLI s: gone'),
  new UsageError('unknown argument'),
  new SpecError(['listeners[0].port: must be <= 65535', 'id: required']),
  new SpecMismatchError('the spec\'s id "a" is not "b"'),
  new MissingCertificateError('server.pem'),
  new PreconditionFailedError('"abc"'),
  new PreconditionFailedError(null),
  new PolicyRefusedError([
    { line: 7, directive: 'lua-load', reason: 'runs Lua code' },
    { line: 9, directive: 'errorfile', reason: 'reads "/x"' },
  ]),
  new StorageFullError('/var/lib/octavia/lb/haproxy.cfg.new', 'ENOSPC'),
  new ObjectNotFoundError('no pool p9 in load balancer lb-1'),
];

const rethrown = (f: () => unknown, err: Error) => {
  try {
    f();
  } catch (thrown) {
    return thrown === err;
  }
  return false;
};

test('every error is an AgentError with a kind', () => {
  for (const err of EVERY_ERROR) assert.ok(err instanceof AgentError && typeof err.kind === 'string', err.constructor.name);
});

test("API 1.0: Octavia's bodies and codes", () => {
  const failed = 'Error plugging VIP';
  const v1 = (err: Error) => v1ErrorResponse(err, failed);
  assert.equal(v1(EVERY_ERROR[0]!), { status: 400, body: { message: 'Invalid VIP' } });
  assert.equal(v1(EVERY_ERROR[1]!), { status: 400, body: { message: 'Invalid Request', details: 'Unknown action: jump' } });
  assert.equal(v1(EVERY_ERROR[2]!), { status: 400, body: { error: '400 Bad Request: Invalid subnet information', http_code: 400 } });
  assert.equal(v1(EVERY_ERROR[3]!), {
    status: 400,
    body: { message: 'Invalid certificate', details: 'expected a PEM certificate followed by its private key: no certificate or no private key found' },
  });
  assert.equal(v1(EVERY_ERROR[4]!), { status: 400, body: { message: 'Invalid request', details: '[ALERT] parsing\n[ALERT] fatal' } });
  assert.equal(v1(EVERY_ERROR[5]!), { status: 400, body: { message: 'Invalid agent configuration', details: '[amphora_agent] x: "y" is not a boolean' } });
  assert.equal(v1(EVERY_ERROR[6]!), { status: 404, body: { message: 'Loadbalancer Not Found', details: 'No loadbalancer with UUID: lb-1' } });
  assert.equal(v1(EVERY_ERROR[7]!), { status: 404, body: { details: 'No suitable network interface found' } });
  assert.equal(v1(EVERY_ERROR[8]!), { status: 409, body: { message: 'Interface already exists' } });
  assert.equal(v1(EVERY_ERROR[9]!), { status: 500, body: { message: 'Unable to update amphora-agent configuration.', details: 'Error: EACCES' } });
  assert.equal(v1(haproxyFailed), { status: 500, body: { message: failed, details: '[ALERT] a\n[ALERT] b' } });
  assert.equal(v1(keepalivedFailed), { status: 500, body: { message: failed, details: 'no ipvs\nbye' } });
  for (const err of EVERY_ERROR.slice(12, 17)) assert.equal(v1(err), { status: 500, body: { message: failed, details: err.message } });
});

test("API 1.0: a failed command without the operation's words, and what is not its own, are thrown again", () => {
  for (const err of [haproxyFailed, keepalivedFailed, new NftablesError('no')]) assert.ok(rethrown(() => v1ErrorResponse(err), err));
  assert.equal(v1ErrorResponse(EVERY_ERROR[23]!), {
    status: 400,
    body: {
      message: 'Invalid request',
      details: 'refused by the amphora agent\'s config policy:\nline 7: lua-load: runs Lua code\nline 9: errorfile: reads "/x"',
    },
  });
  assert.equal(v1ErrorResponse(EVERY_ERROR[24]!), {
    status: 500,
    body: { message: 'No space left on device', details: 'no space left to write /var/lib/octavia/lb/haproxy.cfg.new (ENOSPC); no file was left half-written' },
  });
  for (const err of [...EVERY_ERROR.slice(17, 23), new Error('bug')])
    assert.ok(
      rethrown(() => v1ErrorResponse(err, 'x'), err),
      err.constructor.name,
    );
});

test('API 2.0: {error, message, problems} and the ETag of a failed precondition', () => {
  const [spec, mismatch, missing, precondition, noPrecondition] = EVERY_ERROR.slice(18);
  assert.equal(v2ErrorResponse(spec), {
    status: 400,
    body: { error: 'invalid_spec', message: 'the spec is invalid', problems: ['listeners[0].port: must be <= 65535', 'id: required'] },
  });
  assert.equal(v2ErrorResponse(mismatch), { status: 400, body: { error: 'invalid_spec', message: 'the spec\'s id "a" is not "b"' } });
  assert.equal(v2ErrorResponse(missing), {
    status: 409,
    body: {
      error: 'missing_certificate',
      message: 'certificate file "server.pem" has not been uploaded (PUT /2.0/loadbalancers/{id}/certificates/server.pem)',
    },
  });
  assert.equal(v2ErrorResponse(precondition), {
    status: 412,
    body: { error: 'precondition_failed', message: 'the spec changed: its ETag is now "abc"' },
    headers: { ETag: '"abc"' },
  });
  assert.equal(v2ErrorResponse(noPrecondition), { status: 412, body: { error: 'precondition_failed', message: 'the load balancer does not exist' } });
  assert.equal(v2ErrorResponse(EVERY_ERROR[25]), { status: 404, body: { error: 'not_found', message: 'no pool p9 in load balancer lb-1' } });
  assert.equal(v2ErrorResponse(EVERY_ERROR[4]), {
    status: 422,
    body: {
      error: 'config_rejected',
      message: 'haproxy refused the rendered configuration',
      problems: ['haproxy rejected the configuration:', '[ALERT] parsing', '[ALERT] fatal'],
    },
  });
  assert.equal(v2ErrorResponse(haproxyFailed), {
    status: 500,
    body: { error: 'haproxy_failed', message: 'haproxy did not reload; it keeps serving the previous configuration', problems: ['[ALERT] a', '[ALERT] b'] },
  });
  // A first start that fails leaves nothing serving: the message must not promise a previous configuration.
  assert.equal(v2ErrorResponse(new HaproxyFailedError('start', '[ALERT] cannot bind socket')), {
    status: 500,
    body: { error: 'haproxy_failed', message: 'haproxy did not start; nothing is serving this load balancer', problems: ['[ALERT] cannot bind socket'] },
  });
  assert.equal(v2ErrorResponse(keepalivedFailed), {
    status: 500,
    body: { error: 'keepalived_failed', message: 'keepalived (UDP/SCTP listener) did not start', problems: ['no ipvs', 'bye'] },
  });
});

test("API 2.0: errors that no spec apply throws end in the framework's 500", () => {
  assert.equal(v2ErrorResponse(EVERY_ERROR[24]), {
    status: 507,
    body: { error: 'storage_full', message: 'no space left to write /var/lib/octavia/lb/haproxy.cfg.new (ENOSPC); no file was left half-written' },
  });
  const mapped = new Set([4, 10, 11, 18, 19, 20, 21, 22, 24, 25]);
  for (const [i, err] of EVERY_ERROR.entries())
    if (!mapped.has(i))
      assert.ok(
        rethrown(() => v2ErrorResponse(err), err),
        err.constructor.name,
      );
});

test.run();
