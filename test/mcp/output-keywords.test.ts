/**
 * The secret rules' keyword prefilter (clients/mcp-proxy/output/keywords.ts)
 * against the plain answer (`includes`, lower-cased for caseless keywords) on
 * random texts and keywords over a small alphabet, so that keywords overlap,
 * share anchors and neighbours, and sit at the text's edges.
 */
import { describe, expect, it } from 'vitest';
import { KeywordIndex, type Keyword } from '../../clients/mcp-proxy/output/keywords.js';

/** A seeded generator (mulberry32): a failure names its seed and reproduces. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ALPHABET = 'aAbBkK_-.:@ 0\\Ué';
const word = (next: () => number, length: number) =>
  Array.from({ length }, () => ALPHABET[Math.floor(next() * ALPHABET.length)]!).join('');
const plain = (text: string, k: Keyword) =>
  k.caseless === true ? text.toLowerCase().includes(k.text.toLowerCase()) : text.includes(k.text);

describe('KeywordIndex', () => {
  it('finds exactly the keywords `includes` finds, case-sensitive and caseless', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const next = random(seed);
      const keywords: Keyword[] = Array.from({ length: 1 + Math.floor(next() * 12) }, () => ({
        text: word(next, 1 + Math.floor(next() * 4)).replace(/é/g, 'e'),
        caseless: next() < 0.3,
      }));
      const index = new KeywordIndex(keywords);
      for (let t = 0; t < 20; t++) {
        const text = word(next, Math.floor(next() * 60));
        expect(
          index.present(text),
          `seed ${seed}, text ${JSON.stringify(text)}, keywords ${JSON.stringify(keywords)}`,
        ).toEqual(keywords.map((k) => plain(text, k)));
      }
    }
  });

  it('reads ASCII case only as caseless (as a regular expression with `i` and without `u`)', () => {
    const index = new KeywordIndex([
      { text: 'kelvin', caseless: true },
      { text: 'Sk', caseless: true },
    ]);
    // U+212A KELVIN SIGN and U+017F LONG S fold to K and S only in Unicode mode.
    expect(index.present('\u212Aelvin \u017Fk')).toEqual([false, false]);
    expect(index.present('KELVIN sK')).toEqual([true, true]);
  });

  it('refuses a keyword that is empty or not ASCII', () => {
    expect(() => new KeywordIndex([{ text: '' }])).toThrow(/non-empty ASCII/);
    expect(() => new KeywordIndex([{ text: 'clé' }])).toThrow(/non-empty ASCII/);
  });
});
