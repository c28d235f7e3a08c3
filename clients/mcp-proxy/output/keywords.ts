/**
 * Which of a fixed set of keywords occur in a text: the prefilter of the
 * secret rules (secrets.ts), as gitleaks's keywords are. A rule none of whose
 * keywords occur cannot match, so it is not run.
 *
 * The search is cheap because V8's `indexOf` of a single character is a
 * vectorised scan (about 1 µs over 64 KiB), while a search for a longer string
 * or a regular expression looks at every character (20 to 50 µs each). So each
 * keyword is looked for from an anchor, one of its characters, and checked
 * where the anchor occurs. The anchors are few and rare (by COMMONEST below):
 * chosen as a set cover, each the character with the fewest expected
 * occurrences per keyword it anchors. The keywords that share an anchor share
 * one pass over its occurrences, sorted by the character next to the anchor,
 * so an occurrence costs a table lookup and a comparison with the few
 * keywords that could be there. A caseless keyword (ASCII case, as a regular
 * expression's `i` flag without `u`) anchored on a letter is looked for from
 * both cases of it.
 */

/** A keyword; `caseless`: ASCII letters match in either case. */
export interface Keyword {
  text: string;
  caseless?: boolean;
}

/**
 * Characters from the most to the least common in the texts results carry
 * (prose, code, JSON, logs); a character not listed is rarer than all of them.
 */
const COMMONEST = ' \n\tet"aoin,.srhld-c:u/m0f1p2g_w3y=b4v5k6x7j8q9z\'TSAICEMPNBRDLFHOGW()UVKYJQXZ';

const rarity = (c: string): number => {
  const at = COMMONEST.indexOf(c);
  return at === -1 ? COMMONEST.length : at;
};
const isLetter = (code: number): boolean => (code >= 65 && code <= 90) || (code >= 97 && code <= 122);
/** An ASCII letter's lower case; any other code as it is. */
const fold = (code: number): number => (code >= 65 && code <= 90 ? code + 32 : code);

/** A keyword as one pass sees it: where its anchor is in it. */
interface Entry {
  index: number;
  keyword: Keyword;
  /** The anchor's offset in the keyword. */
  offset: number;
}

/** The neighbour tables' size: ASCII, and one slot (128) for any other character or none. */
const TABLE = 129;

/** One pass: the occurrences of one character, and the keywords anchored on it by their neighbour. */
interface Pass {
  anchor: string;
  /** By the code of the character after the anchor (keywords whose anchor is not their last character); a caseless letter under both cases. */
  after: Array<Entry[] | null>;
  /** By the code of the character before the anchor (keywords anchored on their last character). */
  before: Array<Entry[] | null>;
  /** Keywords of one character. */
  alone: Entry[];
  size: number;
}

/** Whether `keyword` occurs in `text` at `start`. */
function occursAt(text: string, keyword: Keyword, start: number): boolean {
  const k = keyword.text;
  if (start < 0 || start + k.length > text.length) return false;
  for (let i = 0; i < k.length; i++) {
    const a = text.charCodeAt(start + i);
    const b = k.charCodeAt(i);
    if (a !== b && !(keyword.caseless === true && isLetter(b) && fold(a) === fold(b))) return false;
  }
  return true;
}

/** Marks the keywords of `entries` that occur around the anchor at `at`; how many were not marked before. */
function mark(text: string, entries: readonly Entry[], at: number, found: boolean[]): number {
  let hits = 0;
  for (const e of entries)
    if (!found[e.index] && occursAt(text, e.keyword, at - e.offset)) {
      found[e.index] = true;
      hits++;
    }
  return hits;
}

export class KeywordIndex {
  readonly #passes: Pass[] = [];
  readonly #count: number;

  constructor(keywords: readonly Keyword[]) {
    this.#count = keywords.length;
    const passes = new Map<string, Pass>();
    const passOf = (anchor: string): Pass => {
      let pass = passes.get(anchor);
      if (pass === undefined) {
        pass = {
          anchor,
          after: new Array<Entry[] | null>(TABLE).fill(null),
          before: new Array<Entry[] | null>(TABLE).fill(null),
          alone: [],
          size: 0,
        };
        passes.set(anchor, pass);
      }
      return pass;
    };
    for (const { text } of keywords)
      if (text === '' || [...text].some((c) => c.charCodeAt(0) > 127))
        throw new Error(`a keyword is non-empty ASCII: ${JSON.stringify(text)}`);
    // The anchors, chosen greedily (set cover): the character with the fewest expected occurrences per keyword it
    // anchors, among the keywords not anchored yet; a caseless keyword's letter is looked for in both cases.
    const key = (keyword: Keyword, c: string) => (keyword.caseless === true ? c.toLowerCase() : c);
    const cost = (c: string) => {
      const costOf = (x: string) => (COMMONEST.length - rarity(x)) ** 2;
      return c.length === 1 ? costOf(c) : costOf(c[0]!) + costOf(c[1]!);
    };
    /** A keyword's anchor candidates: its characters, a caseless letter as both cases ("kK"). */
    const candidates = (keyword: Keyword) => [
      ...new Set(
        [...keyword.text].map((c) =>
          keyword.caseless === true && c.toLowerCase() !== c.toUpperCase() ? `${c.toLowerCase()}${c.toUpperCase()}` : c,
        ),
      ),
    ];
    const left = new Set(keywords.map((_, i) => i));
    while (left.size > 0) {
      const counts = new Map<string, number>();
      for (const i of left) for (const c of candidates(keywords[i]!)) counts.set(c, (counts.get(c) ?? 0) + 1);
      let best = '';
      for (const [c, n] of counts) if (best === '' || cost(c) / n < cost(best) / counts.get(best)!) best = c;
      for (const i of [...left]) {
        const keyword = keywords[i]!;
        if (!candidates(keyword).includes(best)) continue;
        left.delete(i);
        const k = keyword.text;
        const offset = [...k].findIndex((c) => key(keyword, c) === key(keyword, best[0]!));
        const entry: Entry = { index: i, keyword, offset };
        for (const anchor of best) {
          const pass = passOf(anchor);
          pass.size++;
          if (k.length === 1) pass.alone.push(entry);
          else {
            const [table, neighbour] = offset + 1 < k.length ? [pass.after, offset + 1] : [pass.before, offset - 1];
            const code = k.charCodeAt(neighbour);
            const codes = keyword.caseless === true && isLetter(code) ? [fold(code), fold(code) - 32] : [code];
            for (const c of codes) (table[c] ??= []).push(entry);
          }
        }
      }
    }
    this.#passes = [...passes.values()];
  }

  /**
   * For each keyword, in the order given, whether it occurs in `text`.
   *
   * @example
   * ```ts
   * const index = new KeywordIndex([{ text: 'ghp_' }, { text: 'AKIA' }, { text: 'mongodb:', caseless: true }]);
   * console.log(index.present('use MongoDB://db and ghp_x')); // => [ true, false, true ]
   * ```
   */
  present(text: string): boolean[] {
    const found: boolean[] = new Array<boolean>(this.#count).fill(false);
    const end = text.length;
    for (const { anchor, after, before, alone, size } of this.#passes) {
      let left = size;
      for (let at = text.indexOf(anchor); at !== -1 && left > 0; at = text.indexOf(anchor, at + 1)) {
        for (const e of alone)
          if (!found[e.index]) {
            found[e.index] = true;
            left--;
          }
        const next = at + 1 < end ? Math.min(text.charCodeAt(at + 1), 128) : 128;
        const prev = at > 0 ? Math.min(text.charCodeAt(at - 1), 128) : 128;
        const a = after[next]!;
        if (a !== null) left -= mark(text, a, at, found);
        const b = before[prev]!;
        if (b !== null) left -= mark(text, b, at, found);
      }
    }
    return found;
  }
}
