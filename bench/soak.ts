// bench/soak: 10,000 applies on one agent process (API 1.0 uploads and
// reloads, API 2.0 member calls and whole-spec PUTs, reloads among them)
// under constant traffic to both load balancers. Prints failed requests and
// applies, files left behind, and the agent's RSS and open fds with their
// least-squares slopes per 1,000 applies.
// Run: sudo npm run bench:soak (SOAK_APPLIES=10000, SOAK_HAPROXY=3.0 to pick a version).
import { HAPROXIES } from '../test/helpers/haproxies.js';
import { runSoak } from '../test/helpers/soak.js';

const APPLIES = Number(process.env.SOAK_APPLIES ?? 10_000);
const h = HAPROXIES.find((x) => x.label.includes(process.env.SOAK_HAPROXY ?? '3.0'))!;
const r = await runSoak({
  haproxy: h,
  applies: APPLIES,
  sampleEvery: 50,
  rate: Number(process.env.SOAK_RATE ?? 100),
  ports: { agent: 21290, backend: (i) => 21280 + i },
  progress: (line) => console.log(line),
});
const first = r.samples[0]!;
const last = r.samples[r.samples.length - 1]!;
console.log(JSON.stringify({ ...r, samples: r.samples.length }, null, 1));
console.log(
  `${h.label}: ${r.applies} applies in ${r.seconds.toFixed(0)} s (${(r.applies / r.seconds).toFixed(1)}/s), ${r.requests} requests, ${r.failedRequests.length} failed, ${r.failedApplies.length} failed applies`,
);
console.log(
  `reloads: ${JSON.stringify(r.reloads)}; files appeared: ${r.filesAppeared.length}, temporaries: ${r.temporaries.length}; base_path ${r.basePathBytes.before} -> ${r.basePathBytes.after} bytes`,
);
console.log(
  `RSS ${first.rssKb} -> ${last.rssKb} kB (max ${Math.max(...r.samples.map((s) => s.rssKb))}), slope ${r.rssKbPer1000.toFixed(1)} kB per 1000 applies`,
);
console.log(`samples (apply rss_kB fds): ${r.samples.map((s) => `${s.apply} ${s.rssKb} ${s.fds}`).join(', ')}`);
console.log(`fds ${first.fds} -> ${last.fds} (max ${Math.max(...r.samples.map((s) => s.fds))}), slope ${r.fdsPer1000.toFixed(2)} per 1000 applies`);
process.exitCode = r.failedRequests.length + r.failedApplies.length + r.filesAppeared.length + r.temporaries.length === 0 ? 0 : 1;
