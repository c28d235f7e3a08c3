/**
 * The wire types (the public answers' shapes) are declared once, in the module
 * generated from schemas/api/answers/ (clients/typescript/wire.ts). A
 * TypeScript `interface` or `type` alias, or a dashboard JSDoc `@typedef`,
 * named like one of them anywhere else in runtime/, clients/typescript/ or the
 * dashboard is a hand-written copy; importing or re-exporting the generated
 * type (`export type { Decision } from './wire.js'`, `@typedef
 * {import('.../wire.js').Decision} Decision`, or the same name through a
 * module that imports it: `@typedef {import('./api.js').Decision} Decision`) is not.
 */
import ts from 'typescript';

export const WIRE_MODULE = 'clients/typescript/wire.ts';

/**
 * Internal types of runtime/domain that carry a wire type's name for now:
 * not answers (internal figures and results the presenters turn into answers),
 * or a public form still built in domain/ that issue 38's second part moves
 * into presenters/ (where it takes the generated type). This list may only
 * shrink: the test also fails when an entry no longer exists.
 */
export const KNOWN_INTERNAL: ReadonlyArray<{ file: string; name: string; why: string }> = [
  { file: 'runtime/domain/stats.ts', name: 'DecisionStats', why: 'the figures (milliseconds) decisionStatsBody presents' },
  { file: 'runtime/domain/decision-state.ts', name: 'DecisionPreview', why: "the evaluation's outcome previewResource presents" },
  { file: 'runtime/domain/permits.ts', name: 'PermitVerification', why: "the verifier's result, without object" },
  { file: 'runtime/domain/policy-validation.ts', name: 'PolicyValidation', why: 'the validation outcome (plain data) presenters/policy-validation.ts presents' },
];

/** The names the generated module exports. */
export function wireTypeNames(source: string): string[] {
  const file = ts.createSourceFile(WIRE_MODULE, source, ts.ScriptTarget.ES2022, true);
  return file.statements
    .filter((s): s is ts.InterfaceDeclaration | ts.TypeAliasDeclaration => ts.isInterfaceDeclaration(s) || ts.isTypeAliasDeclaration(s))
    .map((s) => s.name.text);
}

/** `interface X` and `type X =` declared in a TypeScript file (at any depth), X a wire name. */
function tsDeclarations(path: string, source: string, names: ReadonlySet<string>): string[] {
  const file = ts.createSourceFile(path, source, ts.ScriptTarget.ES2022, true);
  const out: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isInterfaceDeclaration(node) || ts.isTypeAliasDeclaration(node)) && names.has(node.name.text)) out.push(node.name.text);
    ts.forEachChild(node, visit);
  };
  visit(file);
  return out;
}

/** `@typedef {T} X` in a JavaScript file, X a wire name, unless T is `import('…').X` (the same name imported: checked where it is declared). */
function jsdocDeclarations(source: string, names: ReadonlySet<string>): string[] {
  const out: string[] = [];
  // The type expression: balanced braces.
  for (const m of source.matchAll(/@typedef\s*\{/g)) {
    let depth = 1;
    let i = m.index + m[0].length;
    while (i < source.length && depth > 0) {
      if (source[i] === '{') depth++;
      else if (source[i] === '}') depth--;
      i++;
    }
    const type = source.slice(m.index + m[0].length, i - 1).trim();
    const name = /^\s*([A-Za-z_$][\w$]*)/.exec(source.slice(i))?.[1];
    if (!name || !names.has(name)) continue;
    const imported = /^import\(\s*['"][^'"]+['"]\s*\)\.([A-Za-z_$][\w$]*)$/.exec(type);
    if (imported?.[1] !== name) out.push(name);
  }
  return out;
}

/**
 * Every hand-written declaration of a wire type among `files` (path -> text),
 * as `path: Name`; the generated module and the known internal types aside.
 *
 * @example
 * handWrittenWireTypes({ 'runtime/domain/decisions.ts': 'interface Decision { id: string }' }, ['Decision']); // => ['runtime/domain/decisions.ts: Decision']
 */
export function handWrittenWireTypes(files: Record<string, string>, wireNames: readonly string[]): string[] {
  const names = new Set(wireNames);
  const known = new Set(KNOWN_INTERNAL.map((k) => `${k.file}: ${k.name}`));
  const out: string[] = [];
  for (const [path, text] of Object.entries(files)) {
    if (path === WIRE_MODULE) continue;
    const found = path.endsWith('.js') ? jsdocDeclarations(text, names) : tsDeclarations(path, text, names);
    for (const name of found) if (!known.has(`${path}: ${name}`)) out.push(`${path}: ${name}`);
  }
  return out;
}
