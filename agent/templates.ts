// The Nunjucks environment every template is rendered with. Autoescape is off:
// these are haproxy, keepalived and systemd files, not HTML; values are made
// safe by validation before they reach a template. Undefined values throw
// instead of rendering as empty text.
import nunjucks from 'nunjucks';
import { TEMPLATES_DIR } from './package-root.js';

let env: nunjucks.Environment | null = null;

function templateEnvironment(): nunjucks.Environment {
  env ??= new nunjucks.Environment(new nunjucks.FileSystemLoader(TEMPLATES_DIR), {
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
