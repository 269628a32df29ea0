// The haproxy configs the allow-list (agent/haproxy/config/policy/haproxy-allowed.ts)
// is derived from: every fixture spec rendered by the JinjaTemplater of
// Octavia 11, 16 and 19 and by the agent's own 2.0 renderer, with the
// features the settings switch on (connection logging on and off, TLS
// defaults, amphora details or none, default and other directories), and
// Octavia's legacy health checks as the agent rewrites them for haproxy 2.7+.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { translateLegacyHttpchk } from '../../agent/haproxy/config/legacy-httpchk.js';
import { renderLoadBalancer } from '../../agent/render/render.js';
import { DEFAULT_RENDER_SETTINGS, type AmphoraFacts, type RenderSettings } from '../../agent/render/settings.js';
import { validateSpec } from '../../agent/model/spec/validate.js';
import type { LoadBalancerSpec } from '../../agent/model/spec/types.js';
import { forOctavia, octaviaAmpDetails, octaviaSettings, type OctaviaRenderer, type OctaviaSettings } from './octavia-render.js';

const FIXTURES = join(process.cwd(), 'test', 'fixtures', 'specs');

export interface CorpusConfig {
  /** Who rendered it: `octavia-16 l7-policies.json haproxy 2.6 ...`. */
  origin: string;
  lbId: string;
  basePath: string;
  baseCertDir: string;
  text: string;
}

export function fixtureSpecs(): { file: string; spec: LoadBalancerSpec }[] {
  return readdirSync(FIXTURES)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => ({ file, spec: validateSpec(JSON.parse(readFileSync(join(FIXTURES, file), 'utf8'))) }));
}

export const CORPUS_AMPHORA: AmphoraFacts = { cpuCount: 4, tunedProfiles: ['amphora'], memoryKb: { free: 600000, buffers: 20000, cached: 180000 } };

/** Settings variants: each switches a feature of the templates on or off. */
const VARIANTS: { name: string; settings: Partial<RenderSettings>; octavia?: OctaviaSettings }[] = [
  { name: 'defaults', settings: {} },
  { name: 'no-connection-logging', settings: { connectionLogging: false } },
  { name: 'other-dirs', settings: { basePath: '/srv/amp', baseCertDir: '/srv/amp/tls', timeoutTcpInspect: 5000 } },
  {
    name: 'tls-defaults',
    settings: {},
    octavia: {
      default_listener_ciphers: 'ECDHE-ECDSA-AES256-GCM-SHA384:TLS_AES_256_GCM_SHA384',
      default_listener_tls_versions: ['TLSv1.2', 'TLSv1.3'],
      default_listener_alpn_protocols: ['h2', 'http/1.1'],
      default_pool_ciphers: 'ECDHE-RSA-AES128-GCM-SHA256',
      default_pool_tls_versions: ['TLSv1.2'],
      default_pool_alpn_protocols: ['http/1.1'],
    },
  },
];

/** The agent's own renders of every fixture, with and without the amphora's facts. */
export function agentCorpus(): CorpusConfig[] {
  const out: CorpusConfig[] = [];
  for (const { file, spec } of fixtureSpecs()) {
    for (const v of VARIANTS) {
      const settings = { ...DEFAULT_RENDER_SETTINGS, ...v.settings };
      for (const amphora of [CORPUS_AMPHORA, undefined]) {
        for (const initStateAtStartup of [true, false]) {
          const text = renderLoadBalancer(spec, settings, { initStateAtStartup, amphora }).haproxyConfig;
          if (text === null) continue;
          out.push({
            origin: `agent ${file} ${v.name} ${amphora ? 'facts' : 'no-facts'} init-state:${initStateAtStartup}`,
            lbId: spec.id,
            basePath: settings.basePath,
            baseCertDir: settings.baseCertDir,
            text,
          });
        }
      }
    }
  }
  return out;
}

/** One Octavia release's renders of every fixture. */
export async function octaviaCorpus(release: string, r: OctaviaRenderer): Promise<CorpusConfig[]> {
  const out: CorpusConfig[] = [];
  for (const { file, spec } of fixtureSpecs()) {
    for (const v of VARIANTS) {
      const rs = { ...DEFAULT_RENDER_SETTINGS, ...v.settings };
      const settings = { ...octaviaSettings(rs), ...v.octavia };
      for (const version of ['2.6', '3.2']) {
        for (const amp of [octaviaAmpDetails(CORPUS_AMPHORA), null]) {
          const text = (await r.render(forOctavia(spec), version, settings, amp)).haproxy;
          if (text === null) continue;
          const origin = `${release} ${file} ${v.name} haproxy ${version} ${amp ? 'details' : 'no-details'}`;
          out.push({ origin, lbId: spec.id, basePath: rs.basePath, baseCertDir: rs.baseCertDir, text });
          // What the agent gives haproxy 2.7+ of Octavia 11-16's health checks (legacy-httpchk.ts) is checked as haproxy runs it.
          const translated = translateLegacyHttpchk(text);
          if (translated !== text)
            out.push({ origin: `${origin} translated`, lbId: spec.id, basePath: rs.basePath, baseCertDir: rs.baseCertDir, text: translated });
        }
      }
    }
  }
  return out;
}
