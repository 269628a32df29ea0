// Configs Octavia 16 and 19 render (their JinjaTemplater, through
// octavia_render.py) for the fixture load balancers, plus TLS variants with
// what those releases add (HSTS, check-alpn; 19: TLS 1.3 ciphersuites split
// from ciphers), read as Octavia 11's do: the config reader finds the same
// members with the same checks, a member-only change plans as runtime steps,
// and the config (as the agent would load it) passes haproxy -c on 3.0 and 3.4.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { loud } from '../helpers/hooks.js';
import { HAPROXIES, OCTAVIAS } from '../helpers/haproxies.js';
import { fixtureWorkspace } from '../helpers/fixture-certs.js';
import { OctaviaRenderer, octaviaSettings } from '../helpers/octavia-render.js';
import { validateSpec } from '../../agent/model/spec/validate.js';
import { DEFAULT_RENDER_SETTINGS } from '../../agent/render/settings.js';
import { readConfig } from '../../agent/haproxy/config/config-reader.js';
import { planRuntime } from '../../agent/haproxy/apply/runtime-plan.js';
import { haproxyCapabilities } from '../../agent/haproxy/process/capabilities.js';
import { runnableConfig } from '../../agent/haproxy/config/runnable.js';
import type { LoadBalancerSpec } from '../../agent/model/spec/types.js';

const FIXTURES = join(process.cwd(), 'test', 'fixtures', 'specs');
const CHECK_ON = HAPROXIES.filter((h) => ['haproxy-3.0', 'haproxy-3.4'].includes(h.label));
const NEWER = OCTAVIAS.filter((o) => ['octavia-16', 'octavia-19'].includes(o.label));
const TLS13 = 'TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384';

type AnyRecord = Record<string, unknown>;

/**
 * What Octavia's API does before a config is rendered: a TLS listener or pool
 * always has ciphers (the configured defaults, which include TLS 1.3 suites).
 * Here TLS 1.2 and 1.3 are both on, so 16+ render ciphers and ciphersuites.
 */
function withApiTlsDefaults(spec: AnyRecord, extra: AnyRecord = {}): AnyRecord {
  const copy = structuredClone(spec) as AnyRecord & { listeners: AnyRecord[] };
  const fill = (o: AnyRecord) => {
    if (o.tls_versions && !o.tls_ciphers) {
      o.tls_ciphers = TLS13;
      o.tls_versions = ['TLSv1.2', 'TLSv1.3'];
    }
  };
  for (const l of copy.listeners) {
    if (l.protocol === 'TERMINATED_HTTPS') Object.assign(l, { tls_ciphers: TLS13, tls_versions: ['TLSv1.2', 'TLSv1.3'], ...extra });
    fill(l);
    const pools = [l.default_pool, ...((l.pools as AnyRecord[] | undefined) ?? [])].filter(Boolean) as AnyRecord[];
    for (const p of pools) if (p.tls_enabled || p.tls_versions) fill(p);
  }
  return copy;
}

const specs: { name: string; spec: LoadBalancerSpec }[] = [];
for (const f of readdirSync(FIXTURES)
  .filter((f) => f.endsWith('.json') && !f.startsWith('render-only'))
  .sort()) {
  const raw = JSON.parse(readFileSync(join(FIXTURES, f), 'utf8')) as AnyRecord;
  specs.push({ name: f, spec: validateSpec(withApiTlsDefaults(raw)) });
}
const hsts = JSON.parse(readFileSync(join(FIXTURES, 'terminated-https-minimal.json'), 'utf8')) as AnyRecord;
specs.push({
  name: 'terminated-https-minimal.json with HSTS',
  spec: validateSpec(withApiTlsDefaults(hsts, { hsts_max_age: 31536000, hsts_include_subdomains: true, hsts_preload: true })),
});

/** backend -> its servers as the agent sees them (name, checked, tracked). */
function members(text: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [name, b] of readConfig(text).backends) {
    out[name] = b.servers.map((s) => `${s.name}${s.checked ? ' checked' : ''}${s.tracked ? ' tracked' : ''}`);
  }
  return out;
}

const t = suite("configs rendered by Octavia 16 and 19: read like 11's, valid on haproxy 3.0 and 3.4");
const renderers = new Map<string, OctaviaRenderer>();
let baseCertDir = '';
let certDir = '';
let workRoot = '';

t.before(
  loud(async () => {
    for (const o of [OCTAVIAS[0]!, ...NEWER]) renderers.set(o.label, await OctaviaRenderer.start(o));
    ({ certDir, workRoot } = await fixtureWorkspace('releases-configs'));
    baseCertDir = join(workRoot, 'certs');
    mkdirSync(baseCertDir);
    // Octavia's paths are <base_cert_dir>/<lb_id>/<file>: every load balancer sees the fixture certificates.
    for (const id of new Set(specs.map((s) => s.spec.id))) symlinkSync(certDir, join(baseCertDir, id));
    // The crt-list the driver writes per TLS listener (<lb_id>/<listener_id>.pem), here naming the fixture server certificate.
    for (const { spec } of specs) {
      for (const l of spec.listeners) if (l.protocol === 'TERMINATED_HTTPS') writeFileSync(join(certDir, `${l.id}.pem`), `${join(certDir, 'server.pem')}\n`);
    }
  }),
);

t.after(async () => {
  for (const r of renderers.values()) await r.close();
});

const features = new Map<string, Set<string>>();

for (const release of NEWER) {
  for (const { name, spec } of specs) {
    t(`${release.label}, ${name}`, async () => {
      const settings = octaviaSettings({ ...DEFAULT_RENDER_SETTINGS, baseCertDir, basePath: workRoot });
      const theirs = (await renderers.get(release.label)!.render(spec, '3.0', settings)).haproxy;
      const eleven = (await renderers.get('octavia-11')!.render(spec, '3.0', settings)).haproxy;
      if (theirs === null) return assert.is(eleven, null);
      const seen = features.get(release.label) ?? new Set<string>();
      features.set(release.label, seen);
      for (const [feature, re] of Object.entries(FEATURES)) if (re.test(theirs)) seen.add(feature);

      assert.equal(members(theirs), members(eleven!), "the same members, with the same checks, as in 11's config");
      assert.equal(planRuntime(theirs, theirs), { steps: [], reloadReason: null });
      const reweighted = theirs.replace(/^(\s+server \S+ \S+ weight )1\b/m, '$17');
      if (reweighted !== theirs) {
        const plan = planRuntime(theirs, reweighted);
        assert.is(plan.reloadReason, null);
        assert.equal(
          plan.steps.map((s) => s.kind),
          ['weight'],
        );
      }

      for (const h of CHECK_ON) {
        const caps = await haproxyCapabilities(h.command, join(workRoot, 'probes'));
        const runnable = runnableConfig(theirs, caps);
        // The agent drops group lines (the group comes from its user/group file).
        const file = join(workRoot, `${release.label}-${name.replace(/\W+/g, '-')}-${h.label}.cfg`);
        writeFileSync(file, runnable.replace(/\s+group\s.+/g, ''));
        const res = spawnSync(h.command[0]!, [...h.command.slice(1), '-c', '-f', file], { encoding: 'utf8' });
        assert.is(res.status, 0, `${h.label} rejected ${release.label}'s config:\n${res.stdout}${res.stderr}`);
      }
    });
  }
}

/** What the newer releases render that 11 does not (or no longer). */
const FEATURES: Record<string, RegExp> = {
  'http-check send hdr Host': /^\s*http-check send hdr Host /m,
  'check-alpn': /\bcheck-alpn\b/,
  ciphersuites: /\bciphersuites\b/,
  HSTS: /Strict-Transport-Security/,
  'stick-table type ipv6': /stick-table type ipv6\b/,
  'option http-use-htx': /option http-use-htx/,
  'ssl-hello-chk': /ssl-hello-chk/,
};

t('the renders covered what 16 and 19 add', () => {
  for (const f of ['check-alpn', 'HSTS', 'stick-table type ipv6']) {
    for (const release of NEWER) assert.ok(features.get(release.label)?.has(f), `no ${release.label} render had ${f}`);
  }
  // 16 still puts TLS 1.3 suites into ciphers; 19 splits them out.
  assert.ok(features.get('octavia-19')!.has('ciphersuites'));
  assert.ok(features.get('octavia-19')!.has('http-check send hdr Host'));
  assert.not.ok(features.get('octavia-19')!.has('option http-use-htx'));
  assert.not.ok(features.get('octavia-19')!.has('ssl-hello-chk'));
});

t.run();
