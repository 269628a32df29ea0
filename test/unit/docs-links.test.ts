// The documents say only what this repository holds (issue 29): every
// relative link in README.md, CHANGELOG.md, docs/, image-build/README.md,
// test/README.md and bench/README.md points to a file that exists (and to a
// heading there, when it names one); every repository path they name in code
// (`agent/...`, `test/...`, `image-build/build.sh`, ...) exists; every command
// they give names an npm script package.json has, a `node dist/X.js` whose
// source X.ts exists, or a `bash` script that exists; and no path leads out
// of the repository (`../shared/...` is someone's machine, not the project).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));

const DOCUMENTS = [
  'README.md',
  'CHANGELOG.md',
  'image-build/README.md',
  'test/README.md',
  'bench/README.md',
  ...readdirSync(join(REPO, 'docs'))
    .filter((n) => n.endsWith('.md'))
    .sort()
    .map((n) => `docs/${n}`),
];

/** Top-level folders a document names by their repository path. */
const TOP = ['agent', 'bench', 'docs', 'examples', 'image-build', 'templates', 'test', '.ci'];
/** Build outputs: named by the documents, made by the build, not in the repository. */
const GENERATED = ['image-build/out/'];

const read = (path: string) => readFileSync(join(REPO, path), 'utf8');
const inside = (abs: string) => {
  const rel = relative(REPO, abs);
  return rel === '' || (!rel.startsWith('..') && !rel.startsWith('/'));
};

/** The text without fenced code blocks (links are prose), and the code: fenced blocks and `spans`. */
function split(markdown: string): { prose: string; code: string[] } {
  const code: string[] = [];
  const prose = markdown.replace(/^(```|~~~)[^\n]*\n([\s\S]*?)^\1\s*$/gm, (_m, _f, body: string) => {
    code.push(body);
    return '';
  });
  for (const m of prose.matchAll(/`([^`\n]+)`/g)) code.push(m[1]!);
  return { prose, code };
}

/** GitHub's anchors for a document's headings. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of split(markdown).prose.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = m[1]!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

function links(doc: string): { target: string; problem: string | null }[] {
  const { prose } = split(read(doc));
  const out: { target: string; problem: string | null }[] = [];
  for (const m of prose.matchAll(/\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const target = m[1]!;
    if (/^[a-z]+:/i.test(target)) continue; // https:, mailto:
    const [path, anchor] = target.split('#') as [string, string | undefined];
    const abs = path === '' ? join(REPO, doc) : resolve(REPO, dirname(doc), path);
    let problem: string | null = null;
    if (!inside(abs)) problem = 'leads out of the repository';
    else if (!existsSync(abs)) problem = 'no such file';
    else if (anchor !== undefined && abs.endsWith('.md') && !anchors(readFileSync(abs, 'utf8')).has(anchor)) problem = `no heading #${anchor}`;
    out.push({ target, problem });
  }
  return out;
}

/** Repository paths named in code: `agent/haproxy/apply/engine.ts`, `test/interop/health-manager` (a test: .test.ts), `templates/keepalived/`. */
function namedPaths(doc: string): string[] {
  const out: string[] = [];
  const pattern = new RegExp(`(?<![\\w./~-])((?:${TOP.map((t) => t.replace('.', '\\.')).join('|')})/[\\w./@+-]*)`, 'g');
  for (const code of split(read(doc)).code) {
    for (const m of code.matchAll(pattern)) {
      const path = m[1]!.replace(/[.,:;]+$/, '');
      if (GENERATED.some((g) => path.startsWith(g))) continue;
      out.push(path);
    }
  }
  return [...new Set(out)];
}

const exists = (path: string) => [path, `${path}.ts`, `${path}.test.ts`].some((p) => existsSync(join(REPO, p)));

test('every relative link points to a file of the repository, and to a heading there', () => {
  const broken = DOCUMENTS.flatMap((doc) =>
    links(doc)
      .filter((l) => l.problem !== null)
      .map((l) => `${doc}: (${l.target}) ${l.problem}`),
  );
  assert.equal(broken, []);
});

test('the README maps every document in docs/ and the OpenAPI document', () => {
  const readme = links('README.md').map((l) => l.target.split('#')[0]);
  const docs = DOCUMENTS.filter((d) => d.startsWith('docs/'));
  assert.equal(
    docs.filter((d) => !readme.includes(d)),
    [],
    'docs/ files the README does not map',
  );
  assert.ok(readme.includes('docs/openapi-2.0.json'));
});

test('no path leads out of the repository', () => {
  const out: string[] = [];
  for (const doc of DOCUMENTS) {
    for (const m of read(doc).matchAll(/(?<![\w.~/-])((?:\.\.\/)+[\w./-]*)/g)) {
      if (!inside(resolve(REPO, dirname(doc), m[1]!))) out.push(`${doc}: ${m[1]}`);
    }
  }
  assert.equal(out, []);
});

test('every repository path named in code exists', () => {
  const named = DOCUMENTS.flatMap((doc) => namedPaths(doc).map((p) => ({ doc, p })));
  assert.equal(
    named.filter(({ p }) => !exists(p)).map(({ doc, p }) => `${doc}: ${p}`),
    [],
  );
  assert.ok(named.length >= 50, `only ${named.length} paths found: the pattern no longer matches the documents`);
});

test('every command names an npm script, a built file or a script that exists', () => {
  const scripts = Object.keys((JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts);
  const problems: string[] = [];
  let commands = 0;
  for (const doc of DOCUMENTS) {
    const text = read(doc);
    for (const m of text.matchAll(/\bnpm run(?: --silent| -s)? ([\w:.-]+)/g)) {
      commands++;
      if (!scripts.includes(m[1]!)) problems.push(`${doc}: npm run ${m[1]}: no such script in package.json`);
    }
    for (const m of text.matchAll(/\bnpm (start|test)\b/g)) {
      commands++;
      if (!scripts.includes(m[1]!)) problems.push(`${doc}: npm ${m[1]}: no such script in package.json`);
    }
    for (const m of text.matchAll(/\bnode (?:[\w-]+ )*dist\/([\w./-]+)\.js\b/g)) {
      commands++;
      if (!existsSync(join(REPO, `${m[1]}.ts`))) problems.push(`${doc}: node dist/${m[1]}.js: no source ${m[1]}.ts`);
    }
    for (const m of text.matchAll(/\b(?:bash|sh) ([\w./-]+\.sh)\b/g)) {
      commands++;
      if (!existsSync(resolve(REPO, m[1]!))) problems.push(`${doc}: bash ${m[1]}: no such script`);
    }
  }
  assert.equal(problems, []);
  assert.ok(commands >= 10, `only ${commands} commands found: the patterns no longer match the documents`);
});

test('the quick start keeps its marked blocks: the README for terminals 1, 2 and 3, the walkthrough after it (integration/quickstart runs them)', () => {
  const terminals = (doc: string) => [...read(doc).matchAll(/<!-- quickstart: terminal (\d) -->\s*```sh\n/g)].map((m) => Number(m[1]));
  assert.equal([...new Set(terminals('README.md'))], [1, 2, 3]);
  assert.ok(terminals('docs/walkthrough.md').length > 0 && terminals('docs/walkthrough.md').every((t) => t === 3));
});

test('the checks themselves: a path out of the repository, a missing file and a missing heading are caught', () => {
  assert.not.ok(inside(resolve(REPO, '../shared/DESIGN.md')));
  assert.ok(inside(resolve(REPO, 'image-build', '../diskimage.yaml')));
  assert.ok(anchors('# A\n## The VM boot test (test/vm)\n```\n# not a heading\n```\n## A\n').has('the-vm-boot-test-testvm'));
  assert.ok(anchors('# A\n## A\n').has('a-1'));
  assert.not.ok(anchors('```\n# not a heading\n```\n').has('not-a-heading'));
  assert.not.ok(exists('agent/no-such-module.ts'));
  assert.ok(exists('test/unit/docs-links'));
});

test.run();
