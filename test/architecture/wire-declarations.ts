/**
 * The wire types (the public answers' and requests' shapes) are declared once,
 * in the module generated from schemas/api/ (clients/typescript/wire.ts). A
 * TypeScript `interface` or `type` alias, or a dashboard JSDoc `@typedef`,
 * named like one of them anywhere else in runtime/, clients/typescript/ or the
 * dashboard is a hand-written copy; importing or re-exporting the generated
 * type (`export type { Decision } from './wire.js'`, `@typedef
 * {import('.../wire.js').Decision} Decision`, or the same name through a
 * module that imports it: `@typedef {import('./api.js').Decision} Decision`) is not.
 * A request shape is also recognised by its fields, whatever its name
 * ({@link handWrittenRequestShapes}): a request is typed by its generated type
 * (`type DecisionInput = DecisionRequest`), never by a copy of its fields.
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
  {
    file: 'runtime/domain/stats.ts',
    name: 'DecisionStats',
    why: 'the figures (milliseconds) decisionStatsBody presents',
  },
  {
    file: 'runtime/domain/decision-state.ts',
    name: 'DecisionPreview',
    why: "the evaluation's outcome previewResource presents",
  },
  { file: 'runtime/domain/permits.ts', name: 'PermitVerification', why: "the verifier's result, without object" },
  {
    file: 'runtime/domain/policy-validation.ts',
    name: 'PolicyValidation',
    why: 'the validation outcome (plain data) presenters/policy-validation.ts presents',
  },
];

/**
 * Internal types whose fields look like a request's but are not one (a parsed
 * form, a key): named here with why. This list may only shrink: the test also
 * fails when an entry no longer exists.
 */
export const KNOWN_INTERNAL_SHAPES: ReadonlyArray<{ shape: string; why: string }> = [
  {
    shape: 'runtime/domain/decisions.ts: { since, until } ~ DecisionExportQuery',
    why: "the export's range, parsed into Dates by the route",
  },
  {
    shape: 'runtime/domain/budgets.ts: { agent_id, session_id, on_behalf_of } ~ BudgetRemainingQuery',
    why: "a budget's key (agent_id null for a user's budget)",
  },
];

/** The names the generated module exports. */
export function wireTypeNames(source: string): string[] {
  const file = ts.createSourceFile(WIRE_MODULE, source, ts.ScriptTarget.ES2022, true);
  return file.statements
    .filter(
      (s): s is ts.InterfaceDeclaration | ts.TypeAliasDeclaration =>
        ts.isInterfaceDeclaration(s) || ts.isTypeAliasDeclaration(s),
    )
    .map((s) => s.name.text);
}

/** `interface X` and `type X =` declared in a TypeScript file (at any depth), X a wire name. */
function tsDeclarations(path: string, source: string, names: ReadonlySet<string>): string[] {
  const file = ts.createSourceFile(path, source, ts.ScriptTarget.ES2022, true);
  const out: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isInterfaceDeclaration(node) || ts.isTypeAliasDeclaration(node)) && names.has(node.name.text))
      out.push(node.name.text);
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

/** The generated request types (their names end in `Request` or `Query`) with their fields, and which of those are required. */
export interface RequestShape {
  name: string;
  fields: ReadonlySet<string>;
  required: ReadonlySet<string>;
}

/** Each generated request type's top-level fields, read from the generated module. */
export function requestShapes(source: string): RequestShape[] {
  const file = ts.createSourceFile(WIRE_MODULE, source, ts.ScriptTarget.ES2022, true);
  return file.statements
    .filter((s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && /(Request|Query)$/.test(s.name.text))
    .map((s) => {
      const props = s.members.filter(ts.isPropertySignature);
      return {
        name: s.name.text,
        fields: new Set(props.map(propertyName)),
        required: new Set(props.filter((p) => !p.questionToken).map(propertyName)),
      };
    });
}

function propertyName(p: ts.PropertySignature): string {
  return ts.isIdentifier(p.name) || ts.isStringLiteral(p.name) ? p.name.text : p.name.getText();
}

/**
 * Whether `fields` (an interface's or a type literal's) copy the request's: all
 * of its required fields (it has some), at least two fields (or all when it has
 * one) and nothing it lacks (a copy, perhaps of part of it); or at least three
 * quarters of the fields of a request of four or more, with fewer other fields
 * than half as many (a copy with fields added; a store row or a figure that
 * carries a request's ids among many fields of its own is not one).
 *
 * @example
 * const decision = { name: 'DecisionRequest', fields: new Set(['agent_id', 'action', 'resource', 'amount']), required: new Set(['agent_id', 'action']) };
 * copiesRequest(new Set(['agent_id', 'action', 'resource']), decision); // => true
 * copiesRequest(new Set(['agent_id', 'action', 'resource', 'amount', 'more']), decision); // => true
 * copiesRequest(new Set(['agent_id', 'resource']), decision); // => false
 */
export function copiesRequest(fields: ReadonlySet<string>, request: RequestShape): boolean {
  const common = [...fields].filter((f) => request.fields.has(f)).length;
  const part =
    request.required.size > 0 &&
    common === fields.size &&
    fields.size >= Math.min(request.fields.size, 2) &&
    [...request.required].every((f) => fields.has(f));
  return (
    part || (request.fields.size >= 4 && common * 4 >= request.fields.size * 3 && (fields.size - common) * 2 < common)
  );
}

/**
 * Every hand-written request shape among the TypeScript `files` (path -> text):
 * an `interface` or an object type literal (a `type` alias's, or one written
 * in place, as a route's `Body: { token: string }`) whose fields copy a
 * generated request type's ({@link copiesRequest}), as `path: Name ~ RequestType`
 * (`{ a, b }`, its fields, for a literal without a name); the generated module,
 * the store (its rows are what is stored, and it may not import the wire types)
 * and the `known` internal shapes aside.
 *
 * @example
 * handWrittenRequestShapes({ 'runtime/routes/permits.ts': 'app.post<{ Body: { token: string } }>(url, handler);' }, [{ name: 'PermitVerifyRequest', fields: new Set(['token']), required: new Set(['token']) }]); // => ['runtime/routes/permits.ts: { token } ~ PermitVerifyRequest']
 */
export function handWrittenRequestShapes(
  files: Record<string, string>,
  requests: readonly RequestShape[],
  known: ReadonlyArray<{ shape: string }> = KNOWN_INTERNAL_SHAPES,
): string[] {
  const out: string[] = [];
  for (const [path, text] of Object.entries(files)) {
    if (path === WIRE_MODULE || path.startsWith('runtime/store/') || !path.endsWith('.ts')) continue;
    const file = ts.createSourceFile(path, text, ts.ScriptTarget.ES2022, true);
    const visit = (node: ts.Node): void => {
      const members = ts.isInterfaceDeclaration(node) || ts.isTypeLiteralNode(node) ? node.members : null;
      if (members) {
        const fields = new Set(members.filter(ts.isPropertySignature).map(propertyName));
        const name = ts.isInterfaceDeclaration(node)
          ? node.name.text
          : ts.isTypeAliasDeclaration(node.parent)
            ? node.parent.name.text
            : `{ ${[...fields].join(', ')} }`;
        for (const request of requests) {
          const found = `${path}: ${name} ~ ${request.name}`;
          if (copiesRequest(fields, request) && !known.some((k) => k.shape === found)) out.push(found);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(file);
  }
  return out;
}
