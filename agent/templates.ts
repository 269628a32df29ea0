// The Nunjucks environment every template is rendered with. Autoescape is off:
// these are haproxy, keepalived and systemd files, not HTML; values are made
// safe by validation before they reach a template. Undefined values throw
// instead of rendering as empty text.
import type { Environment } from 'nunjucks';
import { lazyRequire } from './lazy-require.js';
import { TEMPLATES_DIR } from './package-root.js';

const nunjucksModule = lazyRequire<typeof import('nunjucks')>('nunjucks');
let env: Environment | null = null;

function templateEnvironment(): Environment {
  if (env) return env;
  const nunjucks = nunjucksModule();
  env = new nunjucks.Environment(new nunjucks.FileSystemLoader(TEMPLATES_DIR), {
    autoescape: false,
    throwOnUndefined: true,
    trimBlocks: true,
    lstripBlocks: true,
  });
  return env;
}

export function renderTemplate(name: string, context: object): string {
  return templateEnvironment().render(name, context);
}
