// The allow-list (agent/haproxy/config/policy/haproxy-allowed.ts) regenerated from the
// renders and compared: every fixture spec rendered by the JinjaTemplater of
// Octavia 11, 16 and 19 and by the agent's 2.0 renderer, with the features the
// settings switch on (test/helpers/policy-corpus.ts), must pass the policy
// (the list covers the templates), and leaving out any one entry of the list
// (a line pattern, a server or bind option, a fetch, a converter) must make
// some render fail (the list holds nothing the templates do not say).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { loud } from '../helpers/hooks.js';
import { OCTAVIAS } from '../helpers/haproxies.js';
import { OctaviaRenderer } from '../helpers/octavia-render.js';
import { agentCorpus, octaviaCorpus, type CorpusConfig } from '../helpers/policy-corpus.js';
import { OCTAVIA_ALLOWED, type AllowList } from '../../agent/haproxy/config/policy/haproxy-allowed.js';
import { compileAllowList } from '../../agent/haproxy/config/policy/haproxy-allow-list.js';
import { readConfigPolicy } from '../../agent/haproxy/config/policy/haproxy-config.js';
import type { PolicyContext } from '../../agent/haproxy/config/policy/types.js';

const t = suite('the allow-list is exactly what Octavia 11/16/19 and the 2.0 renderer render');
let corpus: CorpusConfig[] = [];

t.before(
  loud(async () => {
    const all = agentCorpus();
    for (const o of OCTAVIAS) {
      const r = await OctaviaRenderer.start(o);
      try {
        all.push(...(await octaviaCorpus(o.label, r)));
      } finally {
        await r.close();
      }
    }
    // One config per distinct text and directories: the leave-one-out passes below read each once.
    const seen = new Map<string, CorpusConfig>();
    for (const c of all) seen.set(`${c.lbId} ${c.basePath} ${c.baseCertDir}\n${c.text}`, c);
    corpus = [...seen.values()];
  }),
);

const ctxOf = (c: CorpusConfig): PolicyContext => ({
  lbId: c.lbId,
  basePath: c.basePath,
  baseCertDir: c.baseCertDir,
  protectedFiles: ['/etc/octavia/certs/server.pem', '/etc/octavia/certs/client_ca.pem', '/etc/octavia/amphora-agent.conf'],
});

/** The first render `list` refuses, or null when it refuses none. */
function firstRefused(list: AllowList): string | null {
  const compiled = compileAllowList(list);
  for (const c of corpus) {
    const v = readConfigPolicy(c.text, ctxOf(c), compiled).violations;
    if (v.length > 0) return `${c.origin}: line ${v[0]!.line}: ${v[0]!.directive}: ${v[0]!.reason}`;
  }
  return null;
}

t('every render of every fixture passes, Octavia at its defaults (maxconn 50000) included', () => {
  const origins = new Set(corpus.map((c) => c.origin.split(' ')[0]));
  assert.equal([...origins].sort(), ['agent', 'octavia-11', 'octavia-16', 'octavia-19']);
  assert.ok(corpus.length >= 500, `${corpus.length} distinct renders`);
  assert.ok(
    corpus.some((c) => c.origin.includes('defaults') && c.text.includes('maxconn 50000')),
    'no render at the default maxconn',
  );
  const failures = corpus.flatMap((c) => readConfigPolicy(c.text, ctxOf(c)).violations.map((v) => `${c.origin}: line ${v.line}: ${v.directive}: ${v.reason}`));
  assert.equal(failures, []);
});

t('every entry of the list is needed by some render', () => {
  const unused: string[] = [];
  const without = <K extends keyof AllowList>(key: K, value: AllowList[K]): AllowList => ({ ...OCTAVIA_ALLOWED, [key]: value });
  for (const line of OCTAVIA_ALLOWED.lines) {
    if (
      firstRefused(
        without(
          'lines',
          OCTAVIA_ALLOWED.lines.filter((l) => l !== line),
        ),
      ) === null
    )
      unused.push(`line ${line}`);
  }
  for (const key of ['serverOptions', 'bindOptions'] as const) {
    for (const option of Object.keys(OCTAVIA_ALLOWED[key])) {
      const rest = Object.fromEntries(Object.entries(OCTAVIA_ALLOWED[key]).filter(([k]) => k !== option));
      if (firstRefused(without(key, rest)) === null) unused.push(`${key} ${option}`);
    }
  }
  for (const key of ['fetches', 'converters'] as const) {
    for (const name of OCTAVIA_ALLOWED[key]) {
      if (
        firstRefused(
          without(
            key,
            OCTAVIA_ALLOWED[key].filter((n) => n !== name),
          ),
        ) === null
      )
        unused.push(`${key} ${name}`);
    }
  }
  assert.equal(unused, [], 'entries no render needs');
});

t.run();
