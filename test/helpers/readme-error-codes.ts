/**
 * What the README says about error codes: every token inside backticks
 * (`backtickedTokens`) and the rows of its "Error codes" table
 * (`readmeErrorTable`: code -> HTTP status), for the tests that hold the
 * service's answers to its documentation.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const README_PATH = fileURLToPath(new URL('../../README.md', import.meta.url));

export function readReadme(): string {
  return readFileSync(README_PATH, 'utf8');
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
export function readmeErrorTable(markdown: string): Map<string, number> {
  const start = markdown.search(/^#{2,4} Error codes\s*$/m);
  if (start < 0) throw new Error('README.md has no "Error codes" heading');
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
  if (table.size === 0) throw new Error('README.md "Error codes" section has no table rows');
  return table;
}
