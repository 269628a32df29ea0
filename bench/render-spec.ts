// The load balancer bench/render.ts renders: 50 HTTP listeners, each with its
// own pool of 100 members (5,000 in all) and an HTTP health monitor, with
// session persistence and inserted headers on every other one.
import type { LoadBalancerSpec } from '../agent/model/spec/types.js';
import { validateSpec } from '../agent/model/spec/validate.js';

export function benchSpec(listeners = 50, membersPerPool = 100): LoadBalancerSpec {
  const uuid = (kind: number, i: number, j = 0) => `${kind.toString(16).padStart(8, '0')}-0000-4000-8000-${(i * 1000 + j).toString(16).padStart(12, '0')}`;
  return validateSpec({
    id: uuid(1, 0),
    project_id: 'bench',
    vip_address: '203.0.113.10',
    listeners: Array.from({ length: listeners }, (_, i) => ({
      id: uuid(2, i),
      protocol: 'HTTP',
      protocol_port: 10000 + i,
      connection_limit: 100,
      insert_headers: i % 2 === 0 ? { 'X-Forwarded-For': 'true', 'X-Forwarded-Port': 'true' } : {},
      default_pool: {
        id: uuid(3, i),
        protocol: 'HTTP',
        lb_algorithm: 'ROUND_ROBIN',
        ...(i % 2 === 0 ? { session_persistence: { type: 'HTTP_COOKIE' } } : {}),
        healthmonitor: { type: 'HTTP', delay: 5, timeout: 3, max_retries: 2, url_path: '/healthz', expected_codes: '200-204' },
        members: Array.from({ length: membersPerPool }, (_, j) => ({
          id: uuid(4, i, j),
          address: `10.${i}.${j >> 8}.${j & 255}`,
          protocol_port: 8080,
          weight: 1 + (j % 10),
        })),
      },
    })),
  });
}
