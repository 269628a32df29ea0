// The OpenAPI 3.1 description of API 2.0, generated from what the API uses
// so the two cannot drift: the spec's JSON Schema, the path parameter rules
// (api/params.ts) and the apply words (loadbalancer/outcome.ts). Served at
// /2.0/openapi.json and kept in the repository as docs/openapi-2.0.json
// (`node dist/agent/main.js openapi > docs/openapi-2.0.json`; a test compares them).
import { APPLY_PLANS, PUT_RESULTS } from '../../outcome.js';
import { LOAD_BALANCER_SCHEMA, MEMBER_SCHEMA } from '../../model/spec/schema.js';
import { OBJECT_ID_PATTERN, PEM_FILENAME_PATTERN, SPEC_NAME_PATTERN } from '../params.js';

const json = (schema: object) => ({ 'application/json': { schema } });
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const error = (description: string) => ({ description, content: json(ref('Error')) });
const lbId = { name: 'lb_id', in: 'path', required: true, schema: { type: 'string', pattern: OBJECT_ID_PATTERN } };
const poolId = { name: 'pool_id', in: 'path', required: true, schema: { type: 'string', pattern: SPEC_NAME_PATTERN } };
const memberId = { name: 'member_id', in: 'path', required: true, schema: { type: 'string', pattern: SPEC_NAME_PATTERN } };
const dryRun = {
  name: 'dry_run',
  in: 'query',
  required: false,
  schema: { type: 'boolean' },
  description: 'Validate and render only: returns the config and the change plan, haproxy is not touched.',
};
const certName = { name: 'name', in: 'path', required: true, schema: { type: 'string', pattern: PEM_FILENAME_PATTERN } };
const ifMatch = {
  name: 'If-Match',
  in: 'header',
  required: false,
  schema: { type: 'string' },
  description: 'The ETag of the spec this change is based on ("*": any existing spec). A different current ETag gives 412.',
};

export function openApiDocument(): object {
  const { $schema: _schema, $id: _id, ...specSchema } = LOAD_BALANCER_SCHEMA;
  return {
    openapi: '3.1.0',
    info: {
      title: 'Octavia amphora agent, API 2.0',
      version: '2.0',
      description:
        "Declarative load balancers: PUT a spec (Octavia's object model as JSON), the agent renders and applies it; " +
        "member-only changes go through haproxy's runtime API without a reload. Served over HTTPS with mutual TLS, like API 1.0.",
    },
    paths: {
      '/2.0/loadbalancers/{lb_id}': {
        parameters: [lbId],
        put: {
          summary: 'Create or replace a load balancer from its spec',
          parameters: [ifMatch, dryRun],
          requestBody: { required: true, content: json(ref('LoadBalancerSpec')) },
          responses: {
            200: { description: 'Applied (or, with dry_run, planned)', headers: { ETag: { schema: { type: 'string' } } }, content: json(ref('ApplyResult')) },
            201: { description: 'Created', headers: { ETag: { schema: { type: 'string' } } }, content: json(ref('ApplyResult')) },
            400: error('Invalid spec: one line per problem with its field path'),
            409: error('A certificate file the spec names has not been uploaded'),
            412: error('If-Match does not match the current ETag'),
            422: error('haproxy refused the rendered configuration (for example an unreadable certificate)'),
            500: error(
              'haproxy did not load the configuration (after a failed reload it keeps serving the previous one; after a failed first start nothing serves), or keepalived did not start a UDP/SCTP listener',
            ),
          },
        },
        get: {
          summary: 'The current spec, its ETag and the rendered haproxy config',
          responses: {
            200: { description: 'OK', headers: { ETag: { schema: { type: 'string' } } }, content: json(ref('StoredSpec')) },
            404: error('No such load balancer'),
          },
        },
        delete: {
          summary: 'Stop and remove the load balancer',
          parameters: [ifMatch],
          responses: { 204: { description: 'Removed' }, 404: error('No such load balancer'), 412: error('If-Match does not match') },
        },
      },
      '/2.0/loadbalancers/{lb_id}/pools/{pool_id}/members/{member_id}': {
        parameters: [lbId, poolId, memberId],
        put: {
          summary:
            "Add or replace one member of a pool; the load balancer's ETag, If-Match, dry run, protection and result words are those of the whole-spec PUT, " +
            "and the cost does not grow with the load balancer (a UDP/SCTP pool's member goes through the whole-spec path)",
          parameters: [ifMatch, dryRun],
          requestBody: { required: true, content: json(ref('Member')) },
          responses: {
            200: { description: 'Applied (or, with dry_run, planned)', headers: { ETag: { schema: { type: 'string' } } }, content: json(ref('ApplyResult')) },
            400: error('Invalid member: one line per problem with its field path'),
            404: error('No such load balancer or pool'),
            412: error('If-Match does not match the current ETag'),
            500: error('haproxy did not load the configuration'),
          },
        },
        delete: {
          summary: 'Remove one member: drained first (member_drain_timeout), then deleted through the runtime API',
          parameters: [ifMatch, dryRun],
          responses: {
            200: { description: 'Removed (or, with dry_run, planned)', headers: { ETag: { schema: { type: 'string' } } }, content: json(ref('ApplyResult')) },
            404: error('No such load balancer, pool or member'),
            412: error('If-Match does not match the current ETag'),
          },
        },
      },
      '/2.0/loadbalancers/{lb_id}/status': {
        parameters: [lbId],
        get: {
          summary: 'Operating status of listeners, pools and members, from haproxy (as the heartbeat reports them)',
          responses: { 200: { description: 'OK', content: json(ref('Status')) }, 404: error('No such load balancer') },
        },
      },
      '/2.0/loadbalancers/{lb_id}/certificates/{name}': {
        parameters: [lbId, certName],
        put: {
          summary: 'Store a PEM file (certificate with key, CA or CRL) for this load balancer',
          requestBody: { required: true, content: { 'application/x-pem-file': { schema: { type: 'string' } } } },
          responses: { 204: { description: 'Stored' }, 400: error('Not a PEM file') },
        },
        delete: { summary: 'Remove a PEM file', responses: { 204: { description: 'Removed' }, 404: error('No such file') } },
      },
      '/2.0/openapi.json': { get: { summary: 'This document', responses: { 200: { description: 'OK' } } } },
      '/2.0/metrics': {
        get: {
          summary: 'Reloads, runtime changes, failed applies and apply latency (label api: 2.0 spec applies, 1.0 reloads), in Prometheus text format',
          responses: { 200: { description: 'OK', content: { 'text/plain': { schema: { type: 'string' } } } } },
        },
      },
    },
    components: {
      schemas: {
        LoadBalancerSpec: specSchema,
        Member: MEMBER_SCHEMA,
        ApplyResult: {
          type: 'object',
          required: ['result', 'etag', 'changes'],
          properties: {
            result: { enum: [...PUT_RESULTS] },
            etag: { type: 'string' },
            changes: { type: 'array', items: { type: 'string' }, description: 'Spec objects added, removed or changed' },
            runtime: { type: 'array', items: { type: 'string' }, description: 'Member changes applied through the runtime API' },
            reload_reason: { type: ['string', 'null'] },
            pending: { type: 'array', items: { type: 'string' }, description: 'Members in maintenance until their first passing check' },
            lvs: { type: 'array', items: { type: 'string' }, description: 'UDP/SCTP listeners whose keepalived was (re)started or removed' },
            plan: { enum: [...APPLY_PLANS], description: 'dry_run only' },
            config: { type: 'string', description: 'dry_run only: the rendered haproxy config' },
          },
        },
        StoredSpec: {
          type: 'object',
          properties: { spec: ref('LoadBalancerSpec'), etag: { type: 'string' }, config: { type: 'string' } },
        },
        Status: {
          type: 'object',
          properties: {
            id: { type: 'string' },
            listeners: {
              type: 'array',
              items: { type: 'object', properties: { id: { type: 'string' }, operating_status: { type: 'string' }, haproxy_status: { type: 'string' } } },
            },
            pools: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  id: { type: 'string' },
                  listener_id: { type: 'string' },
                  operating_status: { type: 'string' },
                  haproxy_status: { type: 'string' },
                  members: {
                    type: 'array',
                    items: { type: 'object', properties: { id: { type: 'string' }, operating_status: { type: 'string' }, haproxy_status: { type: 'string' } } },
                  },
                },
              },
            },
            haproxy: {
              type: 'object',
              description: "Who keeps haproxy running: the direct supervisor's restarts (restart) or the systemd unit (unit)",
              properties: {
                process_manager: { type: 'string', enum: ['direct', 'systemd'] },
                running: { type: 'boolean' },
                stopped_by_signal: { type: 'boolean' },
                restart: {
                  type: 'object',
                  properties: {
                    state: { type: 'string', enum: ['running', 'stopped', 'waiting', 'dead'] },
                    restarts_in_a_row: { type: 'integer' },
                    next_restart_in_s: { type: 'integer' },
                    last_error: { type: ['string', 'null'] },
                  },
                },
                unit: {
                  type: 'object',
                  properties: {
                    name: { type: 'string' },
                    load_state: { type: 'string' },
                    active_state: { type: 'string' },
                    sub_state: { type: 'string' },
                    result: { type: 'string' },
                    restarts: { type: 'integer' },
                    failed: { type: 'boolean' },
                  },
                },
              },
            },
          },
        },
        Error: {
          type: 'object',
          required: ['error', 'message'],
          properties: { error: { type: 'string' }, message: { type: 'string' }, problems: { type: 'array', items: { type: 'string' } } },
        },
      },
    },
  };
}
