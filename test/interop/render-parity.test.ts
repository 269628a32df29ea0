// The fixture load balancers (test/fixtures/specs, together every row of
// Octavia's feature table), each:
//  - rendered and accepted by haproxy 2.6 and the newer haproxy (`-c`), and
//    its LVS configs by keepalived (`-t`);
//  - rendered by Octavia 19's, 16's and 11's own JinjaTemplater /
//    LvsJinjaTemplater from the same load balancer and the same amphora
//    details, and compared semantically with ours. 19 is the reference; the
//    only differences allowed are listed, with reasons and the releases they
//    apply to, in render-allow-list.ts;
//  - described as a spec by this project's Octavia driver (octavia-driver/)
//    from the models Octavia 19 and 16 render, and that spec rendered by us:
//    the same haproxy and keepalived configs as the fixture's own (issue 30).
// The malformed specs in test/fixtures/specs/invalid are refused with the
// exact field path in test/unit/spec-invalid.test.ts (pure; no haproxy).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { cpSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loud } from '../helpers/hooks.js';
import { HAPROXIES, KEEPALIVEDS, OCTAVIAS, TEST_ROOT } from '../helpers/haproxies.js';
import { fixtureWorkspace } from '../helpers/fixture-certs.js';
import { diffConfigs, formatDifferences } from '../helpers/haproxy-compare.js';
import { forOctavia, OctaviaRenderer, octaviaAmpDetails, octaviaSettings } from '../helpers/octavia-render.js';
import { validateSpec } from '../../agent/model/spec/validate.js';
import { renderLoadBalancer } from '../../agent/render/render.js';
import { DEFAULT_RENDER_SETTINGS, type AmphoraFacts, type RenderTarget } from '../../agent/render/settings.js';
import { checkSpec } from '../../agent/cli/render.js';
import { haproxyCapabilities } from '../../agent/haproxy/process/capabilities.js';
import { ALLOWANCES, LVS_ALLOWANCES, applyAllowances, type OctaviaRelease } from './render-allow-list.js';

const FIXTURES = join(process.cwd(), 'test', 'fixtures', 'specs');
const fixtures = readdirSync(FIXTURES)
  .filter((f) => f.endsWith('.json'))
  .sort();
const invalid = readdirSync(join(FIXTURES, 'invalid'))
  .filter((f) => f.endsWith('.json'))
  .sort();
const load = (f: string) => JSON.parse(readFileSync(join(FIXTURES, f), 'utf8')) as unknown;

/** keepalived text for comparison: no comments or blank lines, single spaces. */
const keepalivedLines = (text: string) =>
  text
    .split('\n')
    .map((l) => l.replace(/#.*/, '').trim().replace(/\s+/g, ' '))
    .filter(Boolean);

/**
 * A 1 GiB amphora with 4 CPUs under the amphora TuneD profile, as its
 * /1.0/details would tell the controller: both renderers size the SSL cache
 * and pin threads from it. Small enough that haproxy -c allocates a cache
 * this machine can spare.
 */
const AMPHORA: AmphoraFacts = { cpuCount: 4, tunedProfiles: ['amphora'], memoryKb: { free: 600000, buffers: 20000, cached: 180000 } };

const t = suite('fixture load balancers: valid for haproxy and keepalived, at parity with Octavia 19 (and 16, 11)');
const octavias = new Map<OctaviaRelease, OctaviaRenderer>();
let certDir: string;
let workRoot: string;
let driverPath: string;
/** The releases this project's Octavia driver supports (octavia-driver/). */
const DRIVER_RELEASES: OctaviaRelease[] = ['octavia-16', 'octavia-19'];

t.before(
  loud(async () => {
    for (const o of OCTAVIAS) octavias.set(o.label as OctaviaRelease, await OctaviaRenderer.start(o));
    ({ certDir, workRoot } = await fixtureWorkspace('parity'));
    // The driver's package where the releases' Python sees it (TEST_ROOT is inside their roots too).
    driverPath = join(workRoot, 'octavia-driver');
    cpSync(join(process.cwd(), 'octavia-driver', 'amphora_spec_driver'), join(driverPath, 'amphora_spec_driver'), { recursive: true });
  }),
);

t.after(async () => {
  for (const o of octavias.values()) await o.close();
});

t('every release of the matrix renders, and says its version', async () => {
  assert.equal([...octavias.keys()], ['octavia-11', 'octavia-16', 'octavia-19']);
  for (const [release, o] of octavias) assert.is((await o.versions()).octavia!.split('.')[0], release.split('-')[1]);
});

t('there are at least 20 fixtures and 15 malformed specs', () => {
  assert.ok(fixtures.length >= 20, `${fixtures.length} fixtures`);
  assert.ok(invalid.length >= 15, `${invalid.length} malformed specs`);
});

for (const file of fixtures) {
  t(`${file}: haproxy -c (every version), keepalived -t, parity with JinjaTemplater 19, 16, 11`, async () => {
    const spec = validateSpec(load(file));
    const settings = DEFAULT_RENDER_SETTINGS;
    const target = (initStateAtStartup: boolean): RenderTarget => ({ initStateAtStartup, amphora: AMPHORA });
    // render-only fixtures use Octavia's 50,000-connection default, which this
    // machine's open-files limit cannot start; they are compared, not run.
    if (!file.startsWith('render-only')) {
      for (const [i, h] of HAPROXIES.entries()) {
        const caps = await haproxyCapabilities(h.command, join(TEST_ROOT, 'probes'));
        // The keepalived versions take turns: each judges every fixture twice.
        const k = KEEPALIVEDS[i % KEEPALIVEDS.length]!;
        const verdicts = await checkSpec(spec, settings, target(caps.initStateAtStartup), h.command, certDir, workRoot, k.command);
        assert.ok(verdicts.length > 0);
        for (const v of verdicts) assert.ok(v.ok, `${h.label}/${k.label}: ${v.tool} rejected the rendering:\n${v.output}`);
      }
    }

    const ours = renderLoadBalancer(spec, settings, target(false));
    const ctx = { spec, amphora: AMPHORA };
    // Newest first: a difference from 19, the reference, is reported before an older release's.
    for (const release of [...octavias.keys()].reverse()) {
      const theirs = await octavias.get(release)!.render(forOctavia(spec), '2.6', octaviaSettings(settings), octaviaAmpDetails(AMPHORA));
      assert.is(ours.haproxyConfig === null, theirs.haproxy === null, `${release}: both render a haproxy config, or neither`);
      if (ours.haproxyConfig !== null && theirs.haproxy !== null) {
        const diffs = diffConfigs(
          applyAllowances(ALLOWANCES, 'ours', ours.haproxyConfig, release, ctx),
          applyAllowances(ALLOWANCES, 'theirs', theirs.haproxy, release, ctx),
        );
        assert.equal(diffs, [], `haproxy.cfg differs from ${release}'s beyond the allow-list:\n${formatDifferences(diffs)}`);
      }
      if (DRIVER_RELEASES.includes(release)) {
        // The same models through this project's driver (issue 30): its spec renders what the spec they came from renders.
        const driven = renderLoadBalancer(
          validateSpec(await octavias.get(release)!.driverSpec(forOctavia(spec), octaviaSettings(settings), driverPath)),
          settings,
          target(false),
        );
        const drivenDiffs = diffConfigs(ours.haproxyConfig ?? '', driven.haproxyConfig ?? '');
        assert.equal(drivenDiffs, [], `${release}: the driver's spec renders differently:\n${formatDifferences(drivenDiffs)}`);
        // Comments aside: the driver names the monitor in one (its id), which the fixture leaves out.
        const lvs = (configs: typeof ours.lvsConfigs) => configs.map((c) => ({ listenerId: c.listenerId, lines: keepalivedLines(c.content) }));
        assert.equal(lvs(driven.lvsConfigs), lvs(ours.lvsConfigs), `${release}: the driver's spec renders other LVS configs`);
      }
      assert.equal(ours.lvsConfigs.map((c) => c.listenerId).sort(), Object.keys(theirs.lvs).sort(), `${release}: LVS configs for the same listeners`);
      for (const { listenerId, content } of ours.lvsConfigs) {
        assert.equal(
          keepalivedLines(applyAllowances(LVS_ALLOWANCES, 'ours', content, release, ctx)),
          keepalivedLines(applyAllowances(LVS_ALLOWANCES, 'theirs', theirs.lvs[listenerId]!, release, ctx)),
          `${release}: keepalived config of ${listenerId}`,
        );
      }
    }
  });
}

t.run();
