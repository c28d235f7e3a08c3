/**
 * The store's SQL functions, one file each: `runtime/store/functions/<name>.sql`
 * holds the one live definition of `<name>`, as a single
 * `create or replace function <name>(...)` statement (comments allowed).
 *
 * This module reads them (checked: the file defines exactly the function it is
 * named after), puts them in an order that respects the calls between them
 * (a function is created after every function it calls: SQL-language bodies are
 * checked at creation), and expands a migration's `\ir ../functions/<name>.sql`
 * lines (psql's include, relative to the migration file) into the file's text.
 * The runner (store/migrate.ts) applies them.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface FunctionFile {
  /** The function's name, which is the file's name without `.sql`. */
  name: string;
  /** The file's text: what is executed. */
  text: string;
  /** sha256 of the text (hex): the function is applied again when it changes. */
  hash: string;
  /** The other function files' functions its body calls (comments excluded). */
  calls: string[];
}

const FUNCTION_FILE = /^([a-z][a-z0-9_]*)\.sql$/;
/** A migration line that includes a function file (psql's `\ir`, relative to the migrations folder). */
const INCLUDE = /^\\ir \.\.\/functions\/([a-z][a-z0-9_]*)\.sql[ \t]*$/gm;

/** The text without `--` comments (function names in prose are not calls). */
const code = (text: string) => text.replace(/--[^\n]*/g, '');

/**
 * Reads every `<name>.sql` of `dir`, checked, in the order they must be applied:
 * a function after those it calls, otherwise by name. Throws on a file that is
 * not exactly one `create or replace function <name>`, and on calls in a circle.
 *
 * @example
 * readFunctionFiles(functionsDir()).map((f) => f.name);
 * // ['authz_expire_holds', ..., 'authz_id_time', 'authz_id_floor', ...]
 */
export function readFunctionFiles(dir: string): FunctionFile[] {
  const files = readdirSync(dir)
    .map((file) => FUNCTION_FILE.exec(file)?.[1])
    .filter((name): name is string => name !== undefined)
    .sort()
    .map((name) => {
      const text = readFileSync(join(dir, `${name}.sql`), 'utf8');
      checkDefinition(name, text);
      return { name, text, hash: createHash('sha256').update(text).digest('hex'), calls: [] as string[] };
    });
  for (const f of files) {
    const body = code(f.text);
    f.calls = files.filter((g) => g.name !== f.name && new RegExp(`\\b${g.name}\\s*\\(`).test(body)).map((g) => g.name);
  }
  return inCallOrder(files);
}

function checkDefinition(name: string, text: string): void {
  const creates = [...code(text).matchAll(/\bcreate\s+(or\s+replace\s+)?function\s+([A-Za-z0-9_."]+)\s*\(/gi)];
  const ok = creates.length === 1 && creates[0]![1] !== undefined && creates[0]![2] === name;
  if (!ok) {
    throw new Error(
      `function file ${name}.sql must hold one statement "create or replace function ${name}(...)"; found ${creates.length === 0 ? 'none' : creates.map((c) => `"${c[0]}"`).join(', ')}`,
    );
  }
}

/** Kahn's order: each step the first by name among those whose callees are all placed. */
function inCallOrder(files: FunctionFile[]): FunctionFile[] {
  const placed = new Set<string>();
  const ordered: FunctionFile[] = [];
  let rest = files;
  while (rest.length > 0) {
    const next = rest.find((f) => f.calls.every((c) => placed.has(c)));
    if (!next)
      throw new Error(
        `function files call each other in a circle: ${rest.map((f) => `${f.name} -> ${f.calls.join(', ')}`).join('; ')}`,
      );
    placed.add(next.name);
    ordered.push(next);
    rest = rest.filter((f) => f !== next);
  }
  return ordered;
}

/**
 * A migration's text with each `\ir ../functions/<name>.sql` line replaced by
 * that file of `functionsDir` (a migration that needs a function while it runs:
 * a trigger it creates, a call in its statements).
 */
export function expandIncludes(migration: string, text: string, functionsDir: string): string {
  return text.replace(INCLUDE, (_line, name: string) => {
    const file = join(functionsDir, `${name}.sql`);
    if (!existsSync(file)) throw new Error(`migration ${migration} includes ${file}, which does not exist`);
    const included = readFileSync(file, 'utf8');
    checkDefinition(name, included);
    return included;
  });
}
