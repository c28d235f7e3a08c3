/**
 * The `pii` detector (docs/mcp.md#detectors): e-mail addresses, phone numbers,
 * payment card numbers and IBANs. Each kind is a cheap candidate scan, linear
 * in the text, then a real check per candidate:
 *
 * - `email`: found from each `@` outwards (no regular expression that could
 *   backtrack over a long run of word characters), a dotted domain with an
 *   alphabetic top-level label;
 * - `phone`: a run of digits and separators, then libphonenumber-js (Google's
 *   metadata, the `max` set) must find a valid number: with a leading `+` (or
 *   `00`) in any country; written nationally, valid in one of the configured
 *   regions and grouped as that country writes it (`(415) 555-2671`,
 *   `020 7946 0958`), so order numbers and dates do not pass;
 * - `card`: 13 to 19 digits (spaces or dashes between groups of four, or 4-6-5),
 *   an issuer's prefix with a length that issuer uses, and the Luhn checksum;
 * - `iban`: a country code, two check digits and the country's BBAN length,
 *   validated by ibantools (ISO 13616 mod-97 and the country's format).
 */
import { isValidIBAN, getCountrySpecifications } from 'ibantools';
import { Metadata, type CountryCode } from 'libphonenumber-js/core';
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import metadata from 'libphonenumber-js/max/metadata';
import type { Span } from './spans.js';

/** The regions whose nationally written numbers count when none are configured. */
export const DEFAULT_PHONE_REGIONS: readonly CountryCode[] = ['US'];

const LOCAL_CHAR = /[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]/;
const DOMAIN_CHAR = /[A-Za-z0-9.-]/;

/** E-mail addresses, from each `@`: a local part of at most 64 characters, a domain of at most 253. */
function findEmails(text: string, out: Span[]): void {
  let at = text.indexOf('@');
  let floor = 0;
  while (at !== -1) {
    let start = at;
    while (start > floor && at - start < 64 && LOCAL_CHAR.test(text[start - 1]!)) start--;
    while (start < at && text[start] === '.') start++;
    if (start === at || !DOMAIN_CHAR.test(text[at + 1] ?? '@')) {
      at = text.indexOf('@', at + 1);
      continue;
    }
    let end = at + 1;
    while (end < text.length && end - at <= 253 && DOMAIN_CHAR.test(text[end]!)) end++;
    while (end > at + 1 && (text[end - 1] === '.' || text[end - 1] === '-')) end--;
    const domain = text.slice(at + 1, end);
    const labels = domain.split('.');
    const tld = labels[labels.length - 1]!;
    // `user:password@host` in a URL is not an address.
    const before = text[start - 1];
    if (
      before !== ':' &&
      before !== '/' &&
      labels.length >= 2 &&
      labels.every((l) => l !== '' && !l.startsWith('-')) &&
      /^[A-Za-z]{2,24}$/.test(tld)
    ) {
      out.push({ start, end, kind: 'pii', rule: 'email' });
      floor = end;
    }
    at = text.indexOf('@', at + 1);
  }
}

/** A phone number candidate: an optional `+`/`00` and 7 to 15 digits with separators, not inside a word or a longer number. */
const PHONE_CANDIDATE = /(?<![\w+.\-/])(?:\+|\b00)?\(?\d[\d ().-]{5,20}\d(?![\w/]|[.-]\d)/g;
/** Dates and times written with separators are not phone numbers. */
const DATE_LIKE = /^(?:\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{4})$/;
/**
 * How many candidates of one text libphonenumber-js checks (each check costs
 * 0.1 to 0.3 ms); past that, a candidate of a phone number's shape counts as
 * one unchecked: a text cannot hide a number behind many decoys.
 */
export const PHONE_CHECKS_PER_TEXT = 24;

/** The lengths of the digit groups of a written number: `(415) 555-2671` -> 3,3,4. */
const groupsOf = (s: string) => (s.match(/\d+/g) ?? []).map((g) => g.length).join(',');

/** A national format of libphonenumber-js's metadata. */
interface NumberFormat {
  pattern(): string;
  format(): string;
  nationalPrefixFormattingRule(): string | undefined;
}

/** The lengths one pattern group of the metadata allows: `(\d{3})` -> [3], `(\d{4,5})` -> [4, 5]; null when it is not of that form. */
function groupLengths(group: string): number[] | null {
  const m = /^\\d(?:\{(\d+)(?:,(\d+))?\})?$/.exec(group);
  if (!m) return null;
  const lo = m[1] === undefined ? 1 : Number(m[1]);
  const hi = m[2] === undefined ? lo : Number(m[2]);
  return Array.from({ length: hi - lo + 1 }, (_, i) => lo + i);
}

/**
 * The digit groupings a region writes its numbers in nationally (with and
 * without the national prefix), from libphonenumber-js's own formats: a
 * necessary condition of the check that follows (the candidate grouped as
 * `formatNational` groups it), at the cost of a set lookup. Null when a
 * format is not of the simple form read here (then every shape is checked).
 */
function nationalShapes(region: CountryCode): Set<string> | null {
  const plan = new Metadata(metadata);
  plan.selectNumberingPlan(region);
  const shapes = new Set<string>();
  // The formats are there at run time; the package's types leave them out.
  for (const format of (plan.numberingPlan as unknown as { formats(): NumberFormat[] }).formats()) {
    const groups = [...format.pattern().matchAll(/\(([^()]*)\)/g)].map((g) => groupLengths(g[1]!));
    if (groups.length === 0 || groups.some((g) => g === null)) return null;
    let combos: number[][] = [[]];
    for (const lengths of groups as number[][]) combos = combos.flatMap((c) => lengths.map((l) => [...c, l]));
    const rule: unknown = format.nationalPrefixFormattingRule();
    for (const combo of combos) {
      const filled = (firstGroup: (g: string) => string) =>
        format.format().replace(/\$(\d)/g, (_: string, k: string) => {
          const digits = '9'.repeat(combo[Number(k) - 1] ?? 0);
          return k === '1' ? firstGroup(digits) : digits;
        });
      shapes.add(groupsOf(filled((g) => g)));
      if (typeof rule === 'string' && rule.includes('$1')) shapes.add(groupsOf(filled((g) => rule.replace('$1', g))));
    }
  }
  return shapes;
}

const shapesByRegion = new Map<CountryCode, Set<string> | null>();

/** Whether a nationally written candidate is grouped the way one of `regions` writes numbers, and is not a date. */
function phoneShaped(written: string, regions: readonly CountryCode[]): boolean {
  if (DATE_LIKE.test(written)) return false;
  const shape = groupsOf(written);
  return regions.some((region) => {
    if (!shapesByRegion.has(region)) shapesByRegion.set(region, nationalShapes(region));
    const shapes = shapesByRegion.get(region);
    return shapes === null || shapes!.has(shape);
  });
}

function findPhones(text: string, regions: readonly CountryCode[], out: Span[]): void {
  let checks = 0;
  const valid = (written: string, international: boolean): boolean => {
    // Past the budget of checks, the shape alone decides.
    if (checks >= PHONE_CHECKS_PER_TEXT) return true;
    checks++;
    let ok = false;
    if (international)
      ok = parsePhoneNumberFromString(written.startsWith('00') ? `+${written.slice(2)}` : written)?.isValid() === true;
    else
      for (const region of regions) {
        const number = parsePhoneNumberFromString(written, region);
        if (number?.isValid() === true && groupsOf(number.formatNational()) === groupsOf(written)) {
          ok = true;
          break;
        }
      }
    return ok;
  };
  /** Whether a candidate is a phone number; decided once per written form in a text (the decision depends on it alone). */
  const decide = (written: string): boolean => {
    const digits = written.replace(/\D/g, '');
    if (digits.length < 7 || digits.length > 15) return false;
    const international = written.startsWith('+') || written.startsWith('00');
    if (international ? digits.length < 8 : !/[\s().-]/.test(written) || !phoneShaped(written, regions)) return false;
    return valid(written, international);
  };
  const decided = new Map<string, boolean>();
  for (const m of text.matchAll(PHONE_CANDIDATE)) {
    const written = m[0];
    let phone = decided.get(written);
    if (phone === undefined) decided.set(written, (phone = decide(written)));
    if (phone) out.push({ start: m.index, end: m.index + written.length, kind: 'pii', rule: 'phone' });
  }
}

/** A card number candidate: 13 to 19 digits, in groups separated by one space or dash. */
const CARD_CANDIDATE = /(?<![\w.-])\d(?:[ -]?\d){12,18}(?![\w]|[.-]\d)/g;
/** The issuers' prefixes and the lengths their numbers have (Visa, Mastercard, Amex, Discover, JCB, Diners, UnionPay). */
const ISSUERS: ReadonlyArray<[RegExp, readonly number[]]> = [
  [/^4/, [13, 16, 19]],
  [/^(?:5[1-5]|2(?:2[2-9]|[3-6]\d|7[01]|720))/, [16]],
  [/^3[47]/, [15]],
  [/^(?:6011|65|64[4-9])/, [16, 17, 18, 19]],
  [/^35(?:2[89]|[3-8])/, [16, 17, 18, 19]],
  [/^3(?:0[0-5]|[68])/, [14, 15, 16]],
  [/^62/, [16, 17, 18, 19]],
];
const issued = (digits: string) =>
  ISSUERS.some(([prefix, lengths]) => prefix.test(digits) && lengths.includes(digits.length));

/**
 * Whether a digit string passes the Luhn checksum.
 *
 * @example
 * ```ts
 * console.log(luhn('4111111111111111'), luhn('4111111111111112')); // => true false
 * ```
 */
export function luhn(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

function findCards(text: string, out: Span[]): void {
  for (const m of text.matchAll(CARD_CANDIDATE)) {
    const written = m[0];
    const digits = written.replace(/\D/g, '');
    const groups = groupsOf(written);
    // Unseparated, or grouped the way cards are printed (fours, or Amex's 4-6-5).
    const grouped =
      groups === String(digits.length) || /^(?:4,)+\d$/.test(`${groups}`) || groups === '4,6,5' || groups === '4,6,4';
    if (grouped && issued(digits) && luhn(digits))
      out.push({ start: m.index, end: m.index + written.length, kind: 'pii', rule: 'card' });
  }
}

/** An IBAN candidate: country, check digits, then letters and digits with single spaces. */
const IBAN_CANDIDATE = /(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]){10,30}/g;
const IBAN_LENGTHS = new Map(
  Object.entries(getCountrySpecifications()).flatMap(([country, spec]) =>
    spec.chars ? [[country, spec.chars] as const] : [],
  ),
);

function findIbans(text: string, out: Span[]): void {
  for (const m of text.matchAll(IBAN_CANDIDATE)) {
    const length = IBAN_LENGTHS.get(m[0].slice(0, 2));
    if (length === undefined) continue;
    // The IBAN is the first `length` letters and digits; the candidate may run on into the next word.
    let end = m.index;
    let seen = 0;
    while (seen < length && end < m.index + m[0].length) if (text[end++] !== ' ') seen++;
    if (seen < length || /[A-Za-z0-9]/.test(text[end] ?? '')) continue;
    const iban = text.slice(m.index, end).replaceAll(' ', '');
    if (isValidIBAN(iban)) out.push({ start: m.index, end, kind: 'pii', rule: 'iban' });
  }
}

/**
 * Where personal data is in `text`: e-mail addresses, phone numbers, card
 * numbers and IBANs. `regions`: where nationally written phone numbers are
 * looked for (international ones, with `+`, count everywhere).
 *
 * @example
 * ```ts
 * const spans = findPii('Call +44 20 7946 0958 or mail ada@example.org', ['US']);
 * console.log(spans.map((s) => s.rule)); // => [ 'email', 'phone' ]
 * ```
 */
export function findPii(text: string, regions: readonly CountryCode[] = DEFAULT_PHONE_REGIONS): Span[] {
  const out: Span[] = [];
  findEmails(text, out);
  const cards: Span[] = [];
  findCards(text, cards);
  findIbans(text, out);
  // A card number is not also a phone number.
  const phones: Span[] = [];
  findPhones(text, regions, phones);
  out.push(...cards, ...phones.filter((p) => !cards.some((c) => c.start < p.end && p.start < c.end)));
  return out;
}
