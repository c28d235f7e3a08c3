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
  /** The import brings in types only (erased when compiled); absent for an import of values. */
  typeOnly?: true;
}

export interface Rule {
  name: string;
  /** A message when the edge breaks the rule, else null. */
  check(edge: ImportEdge): string | null;
}

const isIn = (file: string, folder: string) => file.startsWith(`${folder}/`);

/** The compiler's leaves the clients may import (the action grammar, the AuthZEN action rule, globs for the gateway's output labels): one definition for both sides. */
export const CLIENT_SHARED_COMPILER = [
  'compiler/patterns/action.ts',
  'compiler/patterns/action-names.ts',
  'compiler/patterns/glob.ts',
];
/** The state of a decision at a time: a leaf every layer asks (domain services, presenters, event bodies). */
export const DECISION_STATE = 'runtime/domain/decision-state.ts';
/** Starts every background task of a server process (docs/architecture.md, background/). */
export const BACKGROUND_START = 'runtime/background/start.ts';
const isRelative = (to: string) => to.includes('/') && !to.startsWith('@') && /\.(ts|js|mjs|json)$/.test(to);

export const RULES: Rule[] = [
  {
    name: 'routes never import the store',
    check: (e) =>
      isIn(e.from, 'runtime/routes') && isIn(e.to, 'runtime/store')
        ? `${e.from} imports ${e.to}: call a domain service`
        : null,
  },
  {
    name: 'runtime, bench and examples reach the compiler only through compiler/index.ts',
    check: (e) =>
      (isIn(e.from, 'runtime') || isIn(e.from, 'bench') || isIn(e.from, 'examples')) &&
      isIn(e.to, 'compiler') &&
      e.to !== 'compiler/index.ts'
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
      ['runtime/domain', 'runtime/presenters', 'runtime/events', 'runtime/shared', 'runtime/store'].some((f) =>
        isIn(e.from, f),
      ) &&
      (isIn(e.to, 'runtime/routes') ||
        isIn(e.to, 'runtime/http') ||
        e.to === 'fastify' ||
        e.to === 'runtime/app.ts' ||
        e.to === 'runtime/services.ts')
        ? `${e.from} imports ${e.to}`
        : null,
  },
  {
    name: 'the clients (the TypeScript client, the MCP proxy, the framework adapters) import nothing from the runtime, and from the compiler only its leaves shared with them',
    check: (e) =>
      isIn(e.from, 'clients') &&
      (isIn(e.to, 'runtime') || (isIn(e.to, 'compiler') && !CLIENT_SHARED_COMPILER.includes(e.to)))
        ? `${e.from} imports ${e.to}`
        : null,
  },
  {
    name: 'the runtime takes nothing from the clients but the generated wire types',
    check: (e) =>
      isIn(e.from, 'runtime') && isIn(e.to, 'clients') && e.to !== 'clients/typescript/wire.ts'
        ? `${e.from} imports ${e.to}: only clients/typescript/wire.ts`
        : null,
  },
  {
    name: 'shared utilities import nothing of the project but each other and the clock',
    check: (e) =>
      isIn(e.from, 'runtime/shared') && isRelative(e.to) && !isIn(e.to, 'runtime/shared') && e.to !== 'runtime/clock.ts'
        ? `${e.from} imports ${e.to}`
        : null,
  },
  {
    name: 'the compiler leaves shared with the clients import nothing but each other',
    check: (e) =>
      CLIENT_SHARED_COMPILER.includes(e.from) && !CLIENT_SHARED_COMPILER.includes(e.to)
        ? `${e.from} imports ${e.to}`
        : null,
  },
  {
    name: 'the decision state is a leaf: it imports nothing but the store types',
    check: (e) =>
      e.from === DECISION_STATE && !(isIn(e.to, 'runtime/store') && e.typeOnly)
        ? `${e.from} imports ${e.to}${e.typeOnly ? '' : ' (values)'}`
        : null,
  },
  {
    name: 'presenters and event bodies import only types from the domain (values only from the decision state leaf)',
    check: (e) =>
      (isIn(e.from, 'runtime/presenters') || isIn(e.from, 'runtime/events')) &&
      isIn(e.to, 'runtime/domain') &&
      !e.typeOnly &&
      e.to !== DECISION_STATE
        ? `${e.from} imports values of ${e.to}: the domain hands a presenter plain data`
        : null,
  },
  {
    name: 'domain services never import the presenters (domain rules live in domain/; a service hands plain data to a presenter, events/build.ts builds event bodies with them)',
    check: (e) =>
      isIn(e.from, 'runtime/domain') && isIn(e.to, 'runtime/presenters')
        ? `${e.from} imports ${e.to}: move the rule into runtime/domain/`
        : null,
  },
  {
    name: 'the runtime starts its background work only through runtime/background/start.ts (startBackground: authz serve and the test helper alike)',
    check: (e) =>
      isIn(e.from, 'runtime') &&
      !isIn(e.from, 'runtime/background') &&
      isIn(e.to, 'runtime/background') &&
      e.to !== BACKGROUND_START &&
      !e.typeOnly
        ? `${e.from} imports ${e.to}: start it in ${BACKGROUND_START}`
        : null,
  },
  {
    name: 'the verifier library (agent-authz/verifier) imports nothing of the project outside permit-verifier/: it ships alone, and the runtime imports its permit check from it',
    check: (e) =>
      isIn(e.from, 'permit-verifier') && isRelative(e.to) && !isIn(e.to, 'permit-verifier')
        ? `${e.from} imports ${e.to}`
        : null,
  },
];

/**
 * Every import edge of the given files (relative to `root`): import and export
 * declarations, `import()` calls, `import('...')` types and module
 * augmentations (`declare module '...'`). An edge that only
 * brings in types (`import type`, `export type`, every named binding `type`,
 * an `import('...')` type, an augmentation) is marked `typeOnly`.
 */
export function importEdges(root: string, files: readonly string[]): ImportEdge[] {
  const edges: ImportEdge[] = [];
  for (const file of files) {
    const source = ts.createSourceFile(file, readFileSync(join(root, file), 'utf8'), ts.ScriptTarget.ES2022, false);
    const add = (spec: string, typeOnly: boolean) =>
      edges.push({ from: file, to: target(root, file, spec), ...(typeOnly ? { typeOnly: true as const } : {}) });
    const visit = (node: ts.Node): void => {
      if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier))
        add(node.moduleSpecifier.text, importsOnlyTypes(node));
      else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier))
        add(node.moduleSpecifier.text, exportsOnlyTypes(node));
      else if (
        ts.isImportTypeNode(node) &&
        ts.isLiteralTypeNode(node.argument) &&
        ts.isStringLiteral(node.argument.literal)
      )
        add(node.argument.literal.text, true);
      // `declare module 'fastify' { ... }`: an augmentation depends on the module it augments.
      else if (ts.isModuleDeclaration(node) && ts.isStringLiteral(node.name)) add(node.name.text, true);
      else if (
        ts.isCallExpression(node) &&
        node.expression.kind === ts.SyntaxKind.ImportKeyword &&
        node.arguments[0] &&
        ts.isStringLiteralLike(node.arguments[0])
      )
        add(node.arguments[0].text, false);
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return edges;
}

/** A specifier as an edge's `to`: a relative one resolved (`.js` read as `.ts`), else the package's name. */
function target(root: string, file: string, spec: string): string {
  if (spec.startsWith('.')) {
    const to = relative(root, resolve(root, dirname(file), spec))
      .split('\\')
      .join('/');
    return to.endsWith('.js') ? `${to.slice(0, -3)}.ts` : to;
  }
  if (spec.startsWith('node:')) return spec;
  return spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!;
}

function importsOnlyTypes(node: ts.ImportDeclaration): boolean {
  const clause = node.importClause;
  if (!clause) return false; // `import './x.js'`: run for its effects
  if (clause.isTypeOnly) return true;
  if (clause.name) return false;
  const bindings = clause.namedBindings;
  return (
    bindings !== undefined &&
    ts.isNamedImports(bindings) &&
    bindings.elements.length > 0 &&
    bindings.elements.every((e) => e.isTypeOnly)
  );
}

function exportsOnlyTypes(node: ts.ExportDeclaration): boolean {
  if (node.isTypeOnly) return true;
  const clause = node.exportClause;
  return (
    clause !== undefined &&
    ts.isNamedExports(clause) &&
    clause.elements.length > 0 &&
    clause.elements.every((e) => e.isTypeOnly)
  );
}

/** Every broken rule, one message per edge and rule. */
export function violations(edges: readonly ImportEdge[], rules: readonly Rule[] = RULES): string[] {
  const out: string[] = [];
  for (const edge of edges)
    for (const rule of rules) {
      const message = rule.check(edge);
      if (message) out.push(`${rule.name}: ${message}`);
    }
  return out;
}

/** compiler/index.ts only re-exports: each statement an `export ... from`. */
export function nonReexportStatements(source: string): string[] {
  const file = ts.createSourceFile('index.ts', source, ts.ScriptTarget.ES2022, true);
  return file.statements
    .filter((s) => !(ts.isExportDeclaration(s) && s.moduleSpecifier !== undefined))
    .map((s) => s.getText(file).slice(0, 80));
}

/**
 * Every import cycle among the files of `edges` (package imports ignored), one
 * per strongly connected component of two files or more (or a file importing
 * itself), each written as a path that starts and ends at the same file.
 * Type-only imports count: a cycle of types is a cycle of meaning.
 */
export function importCycles(edges: readonly ImportEdge[]): string[][] {
  const graph = new Map<string, string[]>();
  for (const { from, to } of edges) {
    if (!isRelative(to)) continue;
    const next = graph.get(from) ?? [];
    if (!next.includes(to)) next.push(to);
    graph.set(from, next);
  }
  // Tarjan's strongly connected components, iterative (no deep recursion on a long chain).
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  for (const root of [...graph.keys()].sort()) {
    if (index.has(root)) continue;
    const work: Array<{ node: string; next: number }> = [{ node: root, next: 0 }];
    index.set(root, counter);
    low.set(root, counter++);
    stack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const targets = graph.get(frame.node) ?? [];
      if (frame.next < targets.length) {
        const to = targets[frame.next++]!;
        if (!index.has(to)) {
          index.set(to, counter);
          low.set(to, counter++);
          stack.push(to);
          onStack.add(to);
          work.push({ node: to, next: 0 });
        } else if (onStack.has(to)) low.set(frame.node, Math.min(low.get(frame.node)!, index.get(to)!));
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1]!.node;
        low.set(parent, Math.min(low.get(parent)!, low.get(frame.node)!));
      }
      if (low.get(frame.node) !== index.get(frame.node)) continue;
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== frame.node);
      if (component.length > 1 || targets.includes(frame.node)) components.push(component);
    }
  }
  return components.map((component) => cyclePath(graph, new Set(component)));
}

/** One closed path through a strongly connected component: a shortest cycle through its first file (by name). */
function cyclePath(graph: ReadonlyMap<string, readonly string[]>, members: ReadonlySet<string>): string[] {
  const start = [...members].sort()[0]!;
  const previous = new Map<string, string>();
  const queue: string[] = [start];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const to of graph.get(node) ?? []) {
      if (!members.has(to)) continue;
      if (to === start) {
        const path = [start];
        for (let at = node; at !== start; at = previous.get(at)!) path.unshift(at);
        return [start, ...path];
      }
      if (!previous.has(to)) {
        previous.set(to, node);
        queue.push(to);
      }
    }
  }
  return [start, start];
}

/** Where public JSON forms are built: the presenters, and nowhere else in the shipped code. */
export const PRESENTERS = 'runtime/presenters';

/**
 * Every object literal of `text` (a TypeScript or JavaScript file) that builds
 * a public form: a property `object` whose value is a string literal, as
 * `file:line`. Type declarations (`{ object: 'list'; ... }` in a type) are not
 * literals and do not count.
 *
 * @example
 * publicFormLiterals('runtime/routes/bundle.ts', "reply.send({ object: 'bundle', hash })"); // => ['runtime/routes/bundle.ts:1']
 */
export function publicFormLiterals(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (
      ts.isPropertyAssignment(node) &&
      ts.isObjectLiteralExpression(node.parent) &&
      (ts.isIdentifier(node.name) || ts.isStringLiteral(node.name)) &&
      node.name.text === 'object' &&
      ts.isStringLiteralLike(node.initializer)
    ) {
      found.push(`${file}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}
