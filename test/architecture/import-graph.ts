/**
 * The project's import graph and the layering rules it must keep (README: code
 * map; docs/architecture.md). Each rule is a function of one import edge, so a
 * test can check the rules themselves on made-up edges as well as on the tree.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

export interface ImportEdge {
  /** Importing file, relative to the repository root, with `/`. */
  from: string;
  /** Imported file (relative specifiers resolved, `.js` read as `.ts`), or the bare package name. */
  to: string;
}

export interface Rule {
  name: string;
  /** A message when the edge breaks the rule, else null. */
  check(edge: ImportEdge): string | null;
}

const isIn = (file: string, folder: string) => file.startsWith(`${folder}/`);
const isRelative = (to: string) => to.includes('/') && !to.startsWith('@') && /\.(ts|js|mjs|json)$/.test(to);

export const RULES: Rule[] = [
  {
    name: 'routes never import the store',
    check: (e) => (isIn(e.from, 'runtime/routes') && isIn(e.to, 'runtime/store') ? `${e.from} imports ${e.to}: call a domain service` : null),
  },
  {
    name: 'runtime, bench and examples reach the compiler only through compiler/index.ts',
    check: (e) =>
      (isIn(e.from, 'runtime') || isIn(e.from, 'bench') || isIn(e.from, 'examples')) && isIn(e.to, 'compiler') && e.to !== 'compiler/index.ts'
        ? `${e.from} imports ${e.to}: import it from compiler/index.ts`
        : null,
  },
  {
    name: 'the store imports nothing above it but the tenant types',
    check: (e) =>
      isIn(e.from, 'runtime/store') && isRelative(e.to) && !isIn(e.to, 'runtime/store') && e.to !== 'runtime/tenant.ts'
        ? `${e.from} imports ${e.to}: the store takes and returns plain types`
        : null,
  },
  {
    name: 'the tenant types are a leaf',
    check: (e) => (e.from === 'runtime/tenant.ts' ? `runtime/tenant.ts imports ${e.to}` : null),
  },
  {
    name: 'the compiler imports nothing from the runtime',
    check: (e) => (isIn(e.from, 'compiler') && isIn(e.to, 'runtime') ? `${e.from} imports ${e.to}` : null),
  },
  {
    name: 'domain services, presenters, events and shared utilities know no HTTP',
    check: (e) =>
      ['runtime/domain', 'runtime/presenters', 'runtime/events', 'runtime/shared', 'runtime/store'].some((f) => isIn(e.from, f)) &&
      (isIn(e.to, 'runtime/routes') || isIn(e.to, 'runtime/http') || e.to === 'fastify' || e.to === 'runtime/app.ts' || e.to === 'runtime/services.ts')
        ? `${e.from} imports ${e.to}`
        : null,
  },
  {
    name: 'the clients (the TypeScript client, the MCP proxy, the framework adapters) import nothing from the runtime or the compiler',
    check: (e) => (isIn(e.from, 'clients') && (isIn(e.to, 'runtime') || isIn(e.to, 'compiler')) ? `${e.from} imports ${e.to}` : null),
  },
  {
    name: 'the runtime takes nothing from the clients but the generated wire types',
    check: (e) => (isIn(e.from, 'runtime') && isIn(e.to, 'clients') && e.to !== 'clients/typescript/wire.ts' ? `${e.from} imports ${e.to}: only clients/typescript/wire.ts` : null),
  },
  {
    name: 'shared utilities import nothing of the project but each other and the clock',
    check: (e) =>
      isIn(e.from, 'runtime/shared') && isRelative(e.to) && !isIn(e.to, 'runtime/shared') && e.to !== 'runtime/clock.ts' ? `${e.from} imports ${e.to}` : null,
  },
];

/** Every import edge of the given files (relative to `root`). */
export function importEdges(root: string, files: readonly string[]): ImportEdge[] {
  const edges: ImportEdge[] = [];
  for (const file of files) {
    const text = readFileSync(join(root, file), 'utf8');
    for (const ref of ts.preProcessFile(text, true, true).importedFiles) {
      const spec = ref.fileName;
      let to: string;
      if (spec.startsWith('.')) {
        to = relative(root, resolve(root, dirname(file), spec)).split('\\').join('/');
        if (to.endsWith('.js')) to = `${to.slice(0, -3)}.ts`;
      } else {
        to = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!;
        if (to.startsWith('node:')) to = spec;
      }
      edges.push({ from: file, to });
    }
  }
  return edges;
}

/** Every broken rule, one message per edge and rule. */
export function violations(edges: readonly ImportEdge[], rules: readonly Rule[] = RULES): string[] {
  const out: string[] = [];
  for (const edge of edges) for (const rule of rules) {
    const message = rule.check(edge);
    if (message) out.push(`${rule.name}: ${message}`);
  }
  return out;
}

/** compiler/index.ts only re-exports: each statement an `export ... from`. */
export function nonReexportStatements(source: string): string[] {
  const file = ts.createSourceFile('index.ts', source, ts.ScriptTarget.ES2022, true);
  return file.statements.filter((s) => !(ts.isExportDeclaration(s) && s.moduleSpecifier !== undefined)).map((s) => s.getText(file).slice(0, 80));
}
