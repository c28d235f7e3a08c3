/**
 * The published entry points' documentation (agent-authz/compiler, /verifier,
 * /webhooks): every exported function and class has a doc comment, every
 * function an `@example`, and every example runs against the built package
 * (dist/) and prints what its `// => ...` comments say, line for line.
 *
 * The exports and their doc comments are read with the TypeScript compiler API
 * (re-exports followed to their definitions, as an editor shows them). The
 * examples run in one child process, each as its own module, with the package
 * names pointed at dist/ (public-surface.test.ts covers the names themselves).
 * Needs `npx tsc -p tsconfig.build.json` first.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ENTRIES = ['compiler', 'verifier', 'webhooks'] as const;
/** The source folder of each entry (package.json's `exports` point at the same folders under dist/). */
const FOLDER: Record<(typeof ENTRIES)[number], string> = {
  compiler: 'compiler',
  verifier: 'permit-verifier',
  webhooks: 'webhook-receiver',
};

interface PublicExport {
  entry: (typeof ENTRIES)[number];
  name: string;
  kind: 'function' | 'class' | 'value' | 'type' | 'module';
  description: string;
  examples: string[];
}

/** Every export of each entry, with its documentation as an editor shows it. */
function readExports(): PublicExport[] {
  const files = ENTRIES.map((e) => join(ROOT, FOLDER[e], 'index.ts'));
  const program = ts.createProgram(files, {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    skipLibCheck: true,
    noEmit: true,
    types: ['node'],
  });
  const checker = program.getTypeChecker();
  const out: PublicExport[] = [];
  ENTRIES.forEach((entry, i) => {
    const moduleSymbol = checker.getSymbolAtLocation(program.getSourceFile(files[i]!)!)!;
    for (const exported of checker.getExportsOfModule(moduleSymbol)) {
      const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      const declaration = symbol.declarations?.[0];
      if (!declaration) throw new Error(`${entry}: ${exported.name} has no declaration`);
      const callable = checker.getTypeOfSymbolAtLocation(symbol, declaration).getCallSignatures().length > 0;
      const kind =
        symbol.flags & ts.SymbolFlags.Class
          ? 'class'
          : symbol.flags & ts.SymbolFlags.Function || (symbol.flags & ts.SymbolFlags.Variable && callable)
            ? 'function'
            : symbol.flags & ts.SymbolFlags.Value
              ? 'value'
              : 'type';
      const examples = ts
        .getJSDocTags(declaration)
        .filter((tag) => tag.tagName.text === 'example')
        .map((tag) => ts.getTextOfJSDocComment(tag.comment) ?? '');
      out.push({
        entry,
        name: exported.name,
        kind,
        description: ts.displayPartsToString(symbol.getDocumentationComment(checker)),
        examples,
      });
    }
    // The entry file's own leading doc comment (the package's overview), as `(module)`.
    const header = /^\/\*\*([\s\S]*?)\*\//.exec(readFileSync(files[i]!, 'utf8'))?.[1] ?? '';
    const text = header.replace(/^[ \t]*\* ?/gm, '');
    const examples = text.split('@example').slice(1);
    out.push({ entry, name: '(module)', kind: 'module', description: text.split('@example')[0]!.trim(), examples });
  });
  return out;
}

const exportsList = readExports();
const withExamples = exportsList.filter((e) => e.examples.length > 0);

/** The code of an example (its ```ts fence), with the package's names pointed at dist/. */
function exampleCode(text: string): string {
  const fenced = /```ts\n([\s\S]*?)```/.exec(text);
  if (!fenced) throw new Error(`an example without a \`\`\`ts fence:\n${text}`);
  return fenced[1]!.replace(
    /'agent-authz\/(compiler|verifier|webhooks)'/g,
    (_, entry: (typeof ENTRIES)[number]) => `'${pathToFileURL(join(ROOT, 'dist', FOLDER[entry], 'index.js')).href}'`,
  );
}

/** The lines an example says it prints: its `// => ...` comments, in order. */
function expectedLines(code: string): string[] {
  return [...code.matchAll(/\/\/ => (.*)$/gm)].map((m) => m[1]!.trimEnd());
}

const key = (e: PublicExport, i: number) => `${e.entry}.${e.name}#${i}`;
let work: string;
let results: Record<string, { lines: string[]; error?: string }>;

beforeAll(() => {
  if (!existsSync(join(ROOT, 'dist', 'compiler', 'index.js')))
    throw new Error('dist/ is missing: run npx tsc -p tsconfig.build.json first');
  work = mkdtempSync(join(tmpdir(), 'authz-doc-examples-'));
  const modules: Array<[string, string]> = [];
  for (const e of withExamples) {
    e.examples.forEach((text, i) => {
      const file = join(work, `${modules.length}.mjs`);
      writeFileSync(file, exampleCode(text));
      modules.push([key(e, i), pathToFileURL(file).href]);
    });
  }
  // One process; console.log captured per example (util.format, as console.log prints).
  const runner = `
    import { format } from 'node:util';
    import { writeFileSync } from 'node:fs';
    const modules = ${JSON.stringify(modules)};
    const results = {};
    const log = console.log;
    for (const [key, url] of modules) {
      const lines = [];
      console.log = (...args) => lines.push(...format(...args).split('\\n'));
      try { await import(url); results[key] = { lines }; }
      catch (e) { results[key] = { lines, error: String(e && e.stack || e) }; }
      finally { console.log = log; }
    }
    writeFileSync(${JSON.stringify(join(work, 'results.json'))}, JSON.stringify(results));
  `;
  writeFileSync(join(work, 'runner.mjs'), runner);
  execFileSync(process.execPath, [join(work, 'runner.mjs')], {
    cwd: ROOT,
    timeout: 60_000,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  results = JSON.parse(readFileSync(join(work, 'results.json'), 'utf8')) as typeof results;
});

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('the published entry points are documented', () => {
  it('export what the packages promise', () => {
    const names = (entry: string) =>
      exportsList
        .filter((e) => e.entry === entry && (e.kind === 'function' || e.kind === 'class' || e.kind === 'value'))
        .map((e) => e.name);
    expect(names('compiler')).toEqual(
      expect.arrayContaining(['compileSources', 'evaluate', 'createBundle', 'loadBundle', 'main']),
    );
    expect(names('verifier')).toEqual(expect.arrayContaining(['createPermitVerifier', 'PermitError']));
    expect(names('webhooks').sort()).toEqual([
      'DEFAULT_TOLERANCE_SECONDS',
      'signStandardWebhook',
      'signWebhookBody',
      'verifyStandardWebhook',
      'verifyWebhookSignature',
    ]);
  });

  it.each(ENTRIES)(
    'every function of agent-authz/%s has a doc comment with an example, every class a doc comment',
    (entry) => {
      const undocumented = exportsList
        .filter((e) => e.entry === entry)
        .filter(
          (e) =>
            (e.kind === 'function' && (e.description.trim() === '' || e.examples.length === 0)) ||
            (e.kind === 'class' && e.description.trim() === ''),
        )
        .map((e) => e.name);
      expect(undocumented).toEqual([]);
      expect(
        exportsList.find((e) => e.entry === entry && e.kind === 'module')!.description,
        'the entry file opens with a doc comment',
      ).not.toBe('');
    },
  );
});

describe('every example runs and prints what it says', () => {
  const cases = withExamples.flatMap((e) => e.examples.map((text, i) => ({ id: key(e, i), code: exampleCode(text) })));
  it.each(cases)('$id', ({ id, code }) => {
    const expected = expectedLines(code);
    expect(expected.length, 'an example shows at least one result with // =>').toBeGreaterThan(0);
    const result = results[id]!;
    expect(result.error).toBeUndefined();
    expect(result.lines).toEqual(expected);
  });
});
