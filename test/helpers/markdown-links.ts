/**
 * Links and headings of markdown files, for the test that keeps every relative
 * link of README.md and docs/*.md pointing at something inside the repository.
 *
 * @example
 *   relativeLinks('See [the API](docs/api.md#lists) and [x](https://example.com).');
 *   // [{ target: 'docs/api.md#lists', line: 1 }]
 *   headingAnchors('## `GET /v1/budgets`\n## Policy tests (`*.test.yaml`)');
 *   // Set { 'get-v1budgets', 'policy-tests-testyaml' }
 */

export interface MarkdownLink {
  /** The link's target as written: `path`, `path#anchor` or `#anchor`. */
  target: string;
  /** 1-based line of the link in the file. */
  line: number;
}

/** The text with fenced blocks and inline code spans blanked out (same length, same line breaks). */
export function withoutCode(markdown: string): string {
  const blank = (s: string) => s.replace(/[^\n]/g, ' ');
  const noFences = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[ \t]*$/gm, blank);
  return noFences.replace(/(`+)(?:[^`]|[^`][\s\S]*?[^`])\1(?!`)/g, blank);
}

/** Every `[text](target)` link outside code whose target is not a URL with a scheme (http:, mailto:...). */
export function relativeLinks(markdown: string): MarkdownLink[] {
  const text = withoutCode(markdown);
  const links: MarkdownLink[] = [];
  for (const m of text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    const target = m[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
    links.push({ target, line: text.slice(0, m.index).split('\n').length });
  }
  return links;
}

/**
 * The anchors GitHub gives the headings of a file: the heading's text without
 * markup, lower-cased, everything but letters, digits, `_`, `-` and spaces
 * dropped, spaces turned into `-`; a repeated anchor gets `-1`, `-2`, ...
 */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const text = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[ \t]*$/gm, '');
  for (const m of text.matchAll(/^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$/gm)) {
    const plain = m[1]!
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/`/g, '')
      .replace(/<[^>]+>/g, '');
    const base = plain
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}
