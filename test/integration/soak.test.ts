// A shortened soak (bench/soak runs 10,000): applies in a control plane's mix
// (API 1.0 uploads and reloads, API 2.0 member calls and whole-spec PUTs,
// some reloading) under constant traffic to two load balancers: no failed
// request or apply, no file left behind, and the agent's open file
// descriptors and RSS flat. On the image's haproxy (3.0), the long run; on
// the others, a shorter one for the same checks but RSS, which needs the
// length to rise above the heap's own growth and collection.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { HAPROXIES } from '../helpers/haproxies.js';
import { runSoak, type SoakResult } from '../helpers/soak.js';
import { testPorts } from '../helpers/ports.js';

const PORTS = testPorts('soak');
const AGENT = PORTS.range(HAPROXIES.length);
const BACKENDS = HAPROXIES.map(() => PORTS.range(6));
/** The image's haproxy gets the long run. */
const LONG = 1;
const APPLIES = (hi: number) => (hi === LONG ? 800 : 60);
/** The heap grows to its working size over the first few hundred applies (bench/soak). */
const WARMUP = 400;

function report(label: string, r: SoakResult): void {
  const first = r.samples[0]!;
  const last = r.samples[r.samples.length - 1]!;
  console.log(`\n  ${label}: ${r.applies} applies in ${r.seconds.toFixed(0)} s, ${r.requests} requests, reloads ${JSON.stringify(r.reloads)}`);
  console.log(
    `  RSS ${first.rssKb} -> ${last.rssKb} kB, slope ${r.rssKbPer1000.toFixed(0)} kB/1000 applies; fds ${first.fds} -> ${last.fds}, slope ${r.fdsPer1000.toFixed(1)}/1000`,
  );
}

HAPROXIES.forEach((h, hi) => {
  const t = suite(`soak (${h.label}): ${APPLIES(hi)} applies under traffic, nothing failed, nothing left behind, fds${hi === LONG ? ' and RSS' : ''} flat`);
  t('the soak', async () => {
    const r = await runSoak({
      haproxy: h,
      applies: APPLIES(hi),
      warmup: hi === LONG ? WARMUP : undefined,
      sampleEvery: 10,
      ports: { agent: AGENT(hi), backend: BACKENDS[hi]! },
    });
    report(h.label, r);
    assert.equal(r.failedApplies, [], 'failed applies');
    assert.equal(r.failedRequests, [], 'failed requests');
    assert.ok(r.requests > r.seconds * 100, `only ${r.requests} requests in ${r.seconds} s`);
    assert.equal(r.filesAppeared, [], 'files left behind');
    assert.equal(r.temporaries, [], 'temporary files');
    const warm = r.samples.filter((s) => s.apply >= (hi === LONG ? WARMUP : r.applies / 10));
    // A sample counts what is open at that moment (its children's stdio are
    // left out, and with them any of the agent's own pipes a child inherited):
    // a request, a haproxy -c, a master CLI connection come and go, both ways.
    // A leak raises the typical count: the median of the first and of the
    // last quarter, which must stay within 3.
    const quarter = Math.max(3, Math.floor(warm.length / 4));
    const typical = (xs: typeof warm) => xs.map((s) => s.fds).sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const [fdStart, fdEnd] = [typical(warm.slice(0, quarter)), typical(warm.slice(-quarter))];
    assert.ok(fdEnd <= fdStart + 3, `typically ${fdStart} fds open early, ${fdEnd} late`);
    if (hi === LONG) {
      // After the warm-up RSS swings by about 30 MB as the heap fills and is
      // collected (bench/soak's 10,000 applies stay within 83-117 MB), so a
      // slope over a few hundred applies says little. A leak shows as a level
      // above the warm-up's peak: this catches ~40 kB per apply, no smaller;
      // bench/soak gives the long run's slope.
      const peak = (xs: typeof r.samples) => Math.max(...xs.map((s) => s.rssKb));
      const warmPeak = peak(r.samples.filter((s) => s.apply <= WARMUP));
      const laterPeak = peak(r.samples.filter((s) => s.apply > WARMUP));
      console.log(`  RSS peak ${warmPeak} kB in the warm-up, ${laterPeak} kB after`);
      assert.ok(laterPeak <= warmPeak + 16 * 1024, `RSS peak ${warmPeak} kB in the warm-up, ${laterPeak} kB after`);
    }
  });
  t.run();
});
