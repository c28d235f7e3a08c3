/**
 * Which of a fixed set of keywords occur in a text: the prefilter of the
 * secret rules (secrets.ts), as gitleaks's keywords are. A rule none of whose
 * keywords occur cannot match, so it is not run.
 *
 * The search is cheap because V8's `indexOf` of a single character is a
 * vectorised scan (about 1 µs over 64 KiB), while a search for a longer string
 * or a regular expression looks at every character (20 to 50 µs each). So each
 * keyword is looked for from its anchor, its rarest character (by COMMONEST
 * below), and checked where the anchor occurs; the keywords that share an
 * anchor share one pass over its occurrences, sorted by the character next to
 * the anchor, so an occurrence costs a table lookup and a comparison with the
 * few keywords that could be there. A caseless keyword (ASCII case, as a
 * regular expression's `i` flag without `u`) whose rarest character is a
 * letter is looked for from both cases of it.
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

/** One pass: the occurrences of one character, and the keywords anchored on it by their neighbour (folded). */
interface Pass {
  anchor: string;
  /** By the folded code of the character after the anchor (keywords whose anchor is not their last character). */
  after: Array<Entry[] | undefined>;
  /** By the folded code of the character before the anchor (keywords anchored on their last character). */
  before: Array<Entry[] | undefined>;
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

export class KeywordIndex {
  readonly #passes: Pass[] = [];
  readonly #count: number;

  constructor(keywords: readonly Keyword[]) {
    this.#count = keywords.length;
    const passes = new Map<string, Pass>();
    const passOf = (anchor: string): Pass => {
      let pass = passes.get(anchor);
      if (pass === undefined) {
        pass = { anchor, after: [], before: [], alone: [], size: 0 };
        passes.set(anchor, pass);
      }
      return pass;
    };
    keywords.forEach((keyword, index) => {
      const k = keyword.text;
      if (k === '' || [...k].some((c) => c.charCodeAt(0) > 127)) throw new Error(`a keyword is non-empty ASCII: ${JSON.stringify(k)}`);
      const rank = (i: number) => rarity(keyword.caseless === true ? k[i]!.toLowerCase() : k[i]!);
      let offset = 0;
      for (let i = 1; i < k.length; i++) if (rank(i) > rank(offset)) offset = i;
      const entry: Entry = { index, keyword, offset };
      const code = k.charCodeAt(offset);
      const anchors = keyword.caseless === true && isLetter(code) ? [k[offset]!.toLowerCase(), k[offset]!.toUpperCase()] : [k[offset]!];
      for (const anchor of anchors) {
        const pass = passOf(anchor);
        pass.size++;
        if (k.length === 1) pass.alone.push(entry);
        else {
          const [table, neighbour] = offset + 1 < k.length ? [pass.after, offset + 1] : [pass.before, offset - 1];
          (table[fold(k.charCodeAt(neighbour))] ??= []).push(entry);
        }
      }
    });
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
    const check = (entries: Entry[] | undefined, at: number): number => {
      let hits = 0;
      if (entries !== undefined)
        for (const e of entries)
          if (!found[e.index] && occursAt(text, e.keyword, at - e.offset)) {
            found[e.index] = true;
            hits++;
          }
      return hits;
    };
    for (const pass of this.#passes) {
      let left = pass.size;
      for (let at = text.indexOf(pass.anchor); at !== -1 && left > 0; at = text.indexOf(pass.anchor, at + 1)) {
        left -= check(pass.alone, at);
        if (at + 1 < text.length) left -= check(pass.after[fold(text.charCodeAt(at + 1))], at);
        if (at > 0) left -= check(pass.before[fold(text.charCodeAt(at - 1))], at);
      }
    }
    return found;
  }
}
