/**
 * Repository paths named in source comments, for the test that keeps them
 * pointing at files that exist: a comment naming `runtime/store/migrate.ts`,
 * `helpers/postgres.ts` (from test/docs/, relative to the commenting file's folder or one above it)
 * or `docs/api.md#lists` must name a file the repository has and, for a
 * markdown anchor, a heading that file has.
 *
 * Comments are found by the TypeScript parser (so `//` inside a string or a
 * regular expression is no comment) for .ts/.js/.mjs files, and as `--` lines
 * for .sql files; the title of a test (the first argument of `describe`, `it`
 * or `test`, a plain string) counts as a comment. A path token is a run of `name/` segments ending in a file
 * name with a known extension; tokens inside URLs, package names (`@scope/x`)
 * and `dist/`/`node_modules/` paths are not repository paths and are skipped.
 *
 * @example
 *   pathsInComments('// see runtime/ids.ts and docs/api.md#lists\nconst s = "in a string";', 'x.ts');
 *   // [{ path: 'runtime/ids.ts', anchor: '', line: 1 }, { path: 'docs/api.md', anchor: 'lists', line: 1 }]
 *
 * A comment also cites no document by a bare name: "the contract", "contract:",
 * "the spec's", "spec 2.5" name papers the repository does not have, so a
 * comment names the docs/ section instead (`docs/api.md#decisions`). A public
 * standard named by its name ("the MCP specification", "the AuthZEN spec") is
 * fine.
 *
 * @example
 *   bareCitations('// the contract\'s 409; see the OpenAPI spec', 'x.ts');
 *   // [{ text: 'contract', line: 1 }]
 */
import { existsSync, existsSync as exists, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';
import { REPO_ROOT } from './docs-error-codes.js';
import { headingAnchors } from './markdown-links.js';

/** The repository's top-level folders whose files comments name from the root. */
export const TOP_LEVEL_DIRS = [
  'bench',
  'bin',
  'clients',
  'compiler',
  'docs',
  'examples',
  'patches',
  'permit-verifier',
  'runtime',
  'schemas',
  'scripts',
  'test',
  'webhook-receiver',
] as const;

/** Folders of sources whose comments are checked (fixtures are inputs, not sources). */
const SOURCE_DIRS = TOP_LEVEL_DIRS.filter((d) => d !== 'docs' && d !== 'patches');
const SKIPPED_DIRS = new Set(['node_modules', 'dist', 'fixtures', '.venv', '__pycache__']);
const SOURCE_EXT = /\.(?:ts|mts|js|mjs|sql)$/;

export interface CommentPath {
  /** The path as written, without `#anchor` or `:line`. */
  path: string;
  /** The markdown anchor after `#`, or ''. */
  anchor: string;
  /** 1-based line of the comment text naming it. */
  line: number;
}

export interface DanglingPath extends CommentPath {
  /** The commenting file, relative to the repository root. */
  file: string;
  why: string;
}

const PATH_TOKEN =
  /(?<![\w@./:$%-])((?:\.\.?\/)*(?:[A-Za-z0-9_][\w.-]*\/)+[\w.-]*\.(?:ts|mts|js|mjs|md|sql|yaml|yml|json|py))(?:#([\w-]+))?(?![\w/-])/g;

/** The comments of one source file as [start offset, text] pairs. */
function comments(text: string, file: string): Array<[number, string]> {
  if (file.endsWith('.sql')) {
    const out: Array<[number, string]> = [];
    for (const m of text.matchAll(/--[^\n]*/g)) out.push([m.index, m[0]]);
    return out;
  }
  const source = ts.createSourceFile(
    file,
    text,
    ts.ScriptTarget.Latest,
    false,
    file.endsWith('.ts') ? ts.ScriptKind.TS : ts.ScriptKind.JS,
  );
  const seen = new Map<number, string>();
  const take = (ranges: readonly ts.CommentRange[] | undefined) => {
    for (const r of ranges ?? []) seen.set(r.pos, text.slice(r.pos, r.end));
  };
  const visit = (node: ts.Node) => {
    take(ts.getLeadingCommentRanges(text, node.getFullStart()));
    take(ts.getTrailingCommentRanges(text, node.getEnd()));
    node.forEachChild(visit);
  };
  visit(source);
  take(ts.getLeadingCommentRanges(text, source.endOfFileToken.getFullStart()));
  for (const [pos, title] of testTitles(source)) seen.set(pos, title);
  return [...seen.entries()].sort((a, b) => a[0] - b[0]);
}

const TEST_FUNCTIONS = new Set(['describe', 'it', 'test']);

/** The titles of the tests and suites of `source` (`it('title', ...)`, `describe.each(...)('title', ...)` too) as [offset, text]. */
function testTitles(source: ts.SourceFile): Array<[number, string]> {
  const out: Array<[number, string]> = [];
  const named = (callee: ts.Expression): boolean =>
    ts.isIdentifier(callee)
      ? TEST_FUNCTIONS.has(callee.text)
      : ts.isPropertyAccessExpression(callee)
        ? named(callee.expression)
        : ts.isCallExpression(callee)
          ? named(callee.expression)
          : false;
  const visit = (node: ts.Node) => {
    if (ts.isCallExpression(node) && named(node.expression)) {
      const title = node.arguments[0];
      if (title && (ts.isStringLiteral(title) || ts.isNoSubstitutionTemplateLiteral(title)))
        out.push([title.getStart(source), title.getText(source)]);
    }
    node.forEachChild(visit);
  };
  visit(source);
  return out;
}

/** Every repository-looking path token in the comments of `text` (the contents of `file`). */
export function pathsInComments(text: string, file: string): CommentPath[] {
  const found: CommentPath[] = [];
  for (const [start, comment] of comments(text, file)) {
    for (const m of comment.matchAll(PATH_TOKEN)) {
      const path = m[1]!;
      const first = path.split('/')[0]!;
      if (SKIPPED_DIRS.has(first)) continue;
      found.push({ path, anchor: m[2] ?? '', line: text.slice(0, start + m.index).split('\n').length });
    }
  }
  return found;
}

/**
 * Where a path named in `file` (absolute) resolves, or null: from the
 * repository root when it starts with a top-level folder, from the file's
 * folder when it starts with `./` or `../`, else from the file's folder or the
 * nearest folder above it (inside the repository) that has it, else any file
 * of the repository whose path ends with it.
 */
export function resolveCommentPath(path: string, file: string): string | null {
  // An ES module specifier names the built .js of a .ts source (an import in an example).
  const existsSync = (at: string) => exists(at) || (at.endsWith('.js') && exists(`${at.slice(0, -3)}.ts`));
  const first = path.split('/')[0]!;
  if ((TOP_LEVEL_DIRS as readonly string[]).includes(first)) {
    const at = join(REPO_ROOT, path);
    return existsSync(at) ? at : null;
  }
  if (first === '.' || first === '..') {
    const at = resolve(dirname(file), path);
    return existsSync(at) ? at : null;
  }
  for (let dir = dirname(file); relative(REPO_ROOT, dir).split(sep)[0] !== '..'; dir = dirname(dir)) {
    const at = join(dir, path);
    if (existsSync(at)) return at;
    if (resolve(dir) === resolve(REPO_ROOT)) break;
  }
  // A path relative to some other folder (`views/agents.js` of the dashboard's assets):
  // fine when exactly such a file is in the repository.
  const suffix = `/${path}`;
  return repositoryFiles().find((f) => f.endsWith(suffix)) ?? null;
}

let allFiles: string[] | undefined;

/** Every file under the top-level folders (absolute, `/`-separated), listed once. */
function repositoryFiles(): string[] {
  if (allFiles) return allFiles;
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (SKIPPED_DIRS.has(entry.name) && entry.name !== 'fixtures') continue;
      const at = join(dir, entry.name);
      if (entry.isDirectory()) walk(at);
      else out.push(at.split(sep).join('/'));
    }
  };
  for (const d of TOP_LEVEL_DIRS) if (existsSync(join(REPO_ROOT, d))) walk(join(REPO_ROOT, d));
  return (allFiles = out);
}

/** Every source file whose comments are checked, absolute paths. */
export function commentedSourceFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (SKIPPED_DIRS.has(entry.name)) continue;
      const at = join(dir, entry.name);
      if (entry.isDirectory()) walk(at);
      else if (SOURCE_EXT.test(entry.name)) out.push(at);
    }
  };
  for (const d of SOURCE_DIRS) if (existsSync(join(REPO_ROOT, d))) walk(join(REPO_ROOT, d));
  return out.sort();
}

/** The paths in the comments of the given files (absolute, with their text) that name nothing. */
export function danglingCommentPaths(files: ReadonlyArray<{ file: string; text: string }>): DanglingPath[] {
  const problems: DanglingPath[] = [];
  const anchorsOf = new Map<string, Set<string>>();
  for (const { file, text } of files) {
    for (const p of pathsInComments(text, file)) {
      const report = (why: string) => problems.push({ ...p, file: relative(REPO_ROOT, file), why });
      const at = resolveCommentPath(p.path, file);
      if (at === null) {
        report('no such file');
        continue;
      }
      if (p.anchor === '' || !at.endsWith('.md') || !statSync(at).isFile()) continue;
      let anchors = anchorsOf.get(at);
      if (!anchors) anchorsOf.set(at, (anchors = headingAnchors(readFileSync(at, 'utf8'))));
      if (!anchors.has(p.anchor)) report(`no heading with anchor #${p.anchor}`);
    }
  }
  return problems;
}

export interface BareCitation {
  /** The word as written: `contract`, `spec` or `specification`. */
  text: string;
  /** 1-based line of the comment naming it. */
  line: number;
}

/** `contract`, `spec`, `specification` as words, not inside a path (`fuzz/helpers/contract.js`) or an identifier. */
const CITATION = /(?<![\w/.-])(contract|spec(?:ification)?)(?:'s)?(?![\w/-]|\.(?:js|ts|md)\b)/gi;
/** Words that start a sentence or a phrase, capitalised without naming anything. */
const NOT_A_NAME = new Set(['A', 'An', 'The', 'This', 'That', 'Its', 'Our', 'Their', 'See', 'Per']);

/**
 * The bare citations of a document in the comments (and test titles) of
 * `text`, the contents of `file`: every `contract`, and every `spec` or
 * `specification` not preceded (within two words) by a name such as `MCP`,
 * `AuthZEN`, `OpenAPI` or `Standard Webhooks`.
 */
export function bareCitations(text: string, file: string): BareCitation[] {
  const found: BareCitation[] = [];
  for (const [start, comment] of comments(text, file)) {
    for (const m of comment.matchAll(CITATION)) {
      const word = m[1]!;
      if (!/^contract$/i.test(word)) {
        const before = comment
          .slice(0, m.index)
          .split(/[^\w-]+/)
          .filter(Boolean)
          .slice(-2);
        if (before.some((w) => /[A-Z]/.test(w) && !NOT_A_NAME.has(w))) continue;
      }
      found.push({ text: word, line: text.slice(0, start + m.index).split('\n').length });
    }
  }
  return found;
}
