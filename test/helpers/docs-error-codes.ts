/**
 * What the documentation says about error codes, for the tests that hold the
 * service's answers to it: the rows of the "Error codes" table in
 * docs/errors.md (`documentedErrorTable`: code -> HTTP status), and every token
 * inside backticks anywhere in README.md and docs/*.md (`backtickedTokens` of
 * `readAllDocs()`).
 *
 * @example
 *   const table = documentedErrorTable(readErrorsDoc());
 *   table.get('auth.invalid_key'); // 401
 *   backtickedTokens(readAllDocs()).has('policy.conflict'); // true
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const README_PATH = join(REPO_ROOT, 'README.md');
export const DOCS_DIR = join(REPO_ROOT, 'docs');
export const ERRORS_DOC_PATH = join(DOCS_DIR, 'errors.md');

/** README.md and every docs/*.md, absolute paths, README first. */
export function docFiles(): string[] {
  const docs = readdirSync(DOCS_DIR)
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => join(DOCS_DIR, name));
  return [README_PATH, ...docs];
}

/** docs/errors.md, the home of the "Error codes" table. */
export function readErrorsDoc(): string {
  return readFileSync(ERRORS_DOC_PATH, 'utf8');
}

/** README.md and docs/*.md, joined (each file ends with a newline, so fences never span two files). */
export function readAllDocs(): string {
  return docFiles()
    .map((file) => readFileSync(file, 'utf8').replace(/\n?$/, '\n'))
    .join('\n');
}

/** Every token that appears inside an inline code span (`...`) or a fenced block of the markdown. */
export function backtickedTokens(markdown: string): Set<string> {
  const tokens = new Set<string>();
  const add = (text: string) => {
    for (const t of text.split(/[^A-Za-z0-9_.]+/)) if (t) tokens.add(t.replace(/\.+$/, ''));
  };
  const withoutFences = markdown.replace(/^(```|~~~)[^\n]*\n([\s\S]*?)^\1[ \t]*$/gm, (_m, _f, body: string) => {
    add(body);
    return '';
  });
  for (const m of withoutFences.matchAll(/(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g)) add(m[2]!);
  return tokens;
}

/**
 * The "Error codes" table: `| `code`[, `code`] | status | when |` rows under the
 * heading of that name, up to the next heading. Throws when the section or its
 * rows are missing (a renamed heading must not make every code "undocumented"
 * silently, nor every code documented).
 */
export function documentedErrorTable(markdown: string): Map<string, number> {
  const start = markdown.search(/^#{2,4} Error codes\s*$/m);
  if (start < 0) throw new Error('docs/errors.md has no "Error codes" heading');
  const rest = markdown.slice(start).split('\n').slice(1);
  const end = rest.findIndex((line) => /^#{1,4} /.test(line));
  const section = end < 0 ? rest : rest.slice(0, end);
  const table = new Map<string, number>();
  for (const line of section) {
    const cells = line.split('|').map((c) => c.trim());
    // ['', code cell, status cell, when cell, '']
    if (cells.length < 4 || !/^\d{3}$/.test(cells[2]!)) continue;
    for (const m of cells[1]!.matchAll(/`([a-z_]+\.[a-z_]+)`/g)) table.set(m[1]!, Number(cells[2]));
  }
  if (table.size === 0) throw new Error('docs/errors.md "Error codes" section has no table rows');
  return table;
}
