// The fixture load balancers (test/fixtures/specs, together every row of
// Octavia's feature table), each:
//  - rendered and accepted by haproxy 2.6 and the newer haproxy (`-c`), and
//    its LVS configs by keepalived (`-t`);
//  - rendered by Octavia 11's own JinjaTemplater / LvsJinjaTemplater from the
//    same load balancer, and compared semantically with ours. The only
//    differences allowed are listed, with reasons, in render-allow-list.ts.
// Also: the malformed specs in test/fixtures/specs/invalid are refused with
// the exact field path.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loud } from '../helpers/hooks.js';
import { HAPROXIES, KEEPALIVEDS, TEST_ROOT } from '../helpers/haproxies.js';
import { fixtureWorkspace } from '../helpers/fixture-certs.js';
import { diffConfigs, formatDifferences } from '../helpers/haproxy-compare.js';
import { OctaviaRenderer, octaviaSettings } from '../helpers/octavia-render.js';
import { SpecError, validateSpec } from '../../agent/spec/validate.js';
import { renderLoadBalancer } from '../../agent/render/render.js';
import { DEFAULT_RENDER_SETTINGS } from '../../agent/render/settings.js';
import { checkSpec } from '../../agent/cli/render.js';
import { haproxyCapabilities } from '../../agent/haproxy/capabilities.js';
import type { LoadBalancerSpec } from '../../agent/spec/types.js';
import { ALLOWANCES, LVS_ALLOWANCES, applyAllowances } from './render-allow-list.js';

const FIXTURES = join(process.cwd(), 'test', 'fixtures', 'specs');
const fixtures = readdirSync(FIXTURES).filter((f) => f.endsWith('.json')).sort();
const invalid = readdirSync(join(FIXTURES, 'invalid')).filter((f) => f.endsWith('.json')).sort();
const load = (f: string) => JSON.parse(readFileSync(join(FIXTURES, f), 'utf8')) as unknown;

/**
 * Octavia orders L7 policies by inserting each at its position; a declarative
 * spec sorts by position. Give Octavia the final order as positions 1..n.
 */
function forOctavia(spec: LoadBalancerSpec): LoadBalancerSpec {
  const copy = structuredClone(spec);
  for (const l of copy.listeners) {
    l.l7policies = l.l7policies
      .map((p, i) => ({ p, i }))
      .sort((a, b) => (a.p.position ?? Infinity) - (b.p.position ?? Infinity) || a.i - b.i)
      .map(({ p }, i) => ({ ...p, position: i + 1 }));
  }
  return copy;
}

/** keepalived text for comparison: no comments or blank lines, single spaces. */
const keepalivedLines = (text: string) => text.split('\n').map((l) => l.replace(/#.*/, '').trim().replace(/\s+/g, ' ')).filter(Boolean);

const t = suite('fixture load balancers: valid for haproxy and keepalived, at parity with Octavia 11');
let octavia: OctaviaRenderer;
let certDir: string;
let workRoot: string;

t.before(loud(async () => {
  octavia = await OctaviaRenderer.start();
  ({ certDir, workRoot } = await fixtureWorkspace('parity'));
}));

t.after(async () => {
  await octavia?.close();
});

t('there are at least 20 fixtures and 15 malformed specs', () => {
  assert.ok(fixtures.length >= 20, `${fixtures.length} fixtures`);
  assert.ok(invalid.length >= 15, `${invalid.length} malformed specs`);
});

for (const file of fixtures) {
  t(`${file}: haproxy -c (every version), keepalived -t, parity with JinjaTemplater`, async () => {
    const spec = validateSpec(load(file));
    const settings = DEFAULT_RENDER_SETTINGS;
    // render-only fixtures use Octavia's 50,000-connection default, which this
    // machine's open-files limit cannot start; they are compared, not run.
    if (!file.startsWith('render-only')) {
      for (const [i, h] of HAPROXIES.entries()) {
        const caps = await haproxyCapabilities(h.command, join(TEST_ROOT, 'probes'));
        // The keepalived versions take turns: each judges every fixture twice.
        const k = KEEPALIVEDS[i % KEEPALIVEDS.length]!;
        const verdicts = await checkSpec(spec, settings, { initStateAtStartup: caps.initStateAppliedAtStartup }, h.command, certDir, workRoot, k.command);
        assert.ok(verdicts.length > 0);
        for (const v of verdicts) assert.ok(v.ok, `${h.label}/${k.label}: ${v.tool} rejected the rendering:\n${v.output}`);
      }
    }

    const ours = renderLoadBalancer(spec, settings, { initStateAtStartup: false });
    const theirs = await octavia.render(forOctavia(spec), '2.6', octaviaSettings(settings));
    assert.is(ours.haproxyConfig === null, theirs.haproxy === null, 'both render a haproxy config, or neither');
    if (ours.haproxyConfig !== null && theirs.haproxy !== null) {
      const diffs = diffConfigs(
        applyAllowances(ALLOWANCES, 'ours', ours.haproxyConfig, spec),
        applyAllowances(ALLOWANCES, 'theirs', theirs.haproxy, spec),
      );
      assert.equal(diffs, [], `haproxy.cfg differs from Octavia's beyond the allow-list:\n${formatDifferences(diffs)}`);
    }
    assert.equal(ours.lvsConfigs.map((c) => c.listenerId).sort(), Object.keys(theirs.lvs).sort(), 'LVS configs for the same listeners');
    for (const { listenerId, content } of ours.lvsConfigs) {
      assert.equal(
        keepalivedLines(applyAllowances(LVS_ALLOWANCES, 'ours', content, spec)),
        keepalivedLines(applyAllowances(LVS_ALLOWANCES, 'theirs', theirs.lvs[listenerId]!, spec)),
        `keepalived config of ${listenerId}`,
      );
    }
  });
}

for (const file of invalid) {
  t(`invalid/${file}: refused with the exact field path`, () => {
    const { spec, error } = load(join('invalid', file)) as { spec: unknown; error: string };
    try {
      validateSpec(spec);
    } catch (err) {
      assert.instance(err, SpecError);
      assert.ok((err as SpecError).problems.some((p) => p.startsWith(error)), `expected "${error}", got: ${(err as Error).message}`);
      return;
    }
    assert.unreachable('the malformed spec was accepted');
  });
}

t.run();
