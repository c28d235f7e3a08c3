/**
 * Exact decimal sums for `history.sum` from a lease's memory
 * (runtime/history/leases.ts): the store adds amounts as `numeric`, so the
 * memory adds their decimal text exactly (never as binary floating point, where
 * 0.1 + 0.2 is not 0.3), and the value is the store's `numeric::text` read as a
 * number either way.
 */

/** A decimal as an integer and a power of ten: value = digits / 10^scale. */
interface Scaled {
  digits: bigint;
  scale: number;
}

const DECIMAL = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;

function parse(text: string): Scaled {
  const m = DECIMAL.exec(text.trim());
  if (!m || (m[2] === '' && (m[3] ?? '') === '')) throw new Error(`not a decimal: ${text}`);
  const fraction = m[3] ?? '';
  const exponent = Number(m[4] ?? 0);
  let digits = BigInt(`${m[1] === '-' ? '-' : ''}${m[2] || '0'}${fraction}`);
  let scale = fraction.length - exponent;
  if (scale < 0) {
    digits *= 10n ** BigInt(-scale);
    scale = 0;
  }
  return { digits, scale };
}

/**
 * The exact sum of decimal texts (a number's JSON text, or the store's
 * `numeric::text`), as a number.
 *
 * @example
 * sumDecimals(['0.1', '0.2']) // 0.3
 */
export function sumDecimals(values: readonly string[]): number {
  if (values.length === 0) return 0;
  const parsed = values.map(parse);
  const scale = Math.max(...parsed.map((p) => p.scale));
  let total = 0n;
  for (const p of parsed) total += p.digits * 10n ** BigInt(scale - p.scale);
  if (scale === 0) return Number(total);
  const negative = total < 0n;
  const text = (negative ? -total : total).toString().padStart(scale + 1, '0');
  return Number(`${negative ? '-' : ''}${text.slice(0, -scale)}.${text.slice(-scale)}`);
}
