/**
 * ISO 8601 times given by people (the service's query parameters such as
 * `GET /v1/decisions/export?since=`, and `authz replay --since`): a date
 * (`2026-11-21`, midnight UTC) or a date and time (`2026-11-21T10:00`,
 * `...:05`, `...:05.250`) with `Z` or an offset. The date and time must exist
 * (no `2026-02-30`, no `24:00`, no second 60, no offset past 23:59: `Date.parse`
 * rolls such dates over into the next month) and the instant must lie in the
 * years 1970 to 9999 UTC (docs/api.md#get-v1decisionsexport-extension).
 */

const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?(Z|([+-])(\d{2}):(\d{2}))?)?$/;

/** The first and last instants accepted (ms): 1970-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z. */
const MIN_MS = 0;
const MAX_MS = Date.UTC(10_000, 0, 1) - 1;

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function isLeap(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

/**
 * The instant (ms since the epoch) an ISO 8601 date or date-time names, or
 * null when it is not one, names a date or time that does not exist, or lies
 * outside the years 1970 to 9999 (UTC). A time needs `Z` or an offset unless
 * `utcWithoutOffset` is set (then a time without one is UTC).
 *
 * @example
 * ```ts
 * import { isoInstant } from 'agent-authz/compiler';
 *
 * console.log(isoInstant('2026-11-21T10:00:00+01:00') === Date.parse('2026-11-21T09:00:00Z')); // => true
 * console.log(isoInstant('2026-02-30')); // => null
 * console.log(isoInstant('0000-01-01T00:00:00Z')); // => null
 * console.log(isoInstant('2026-11-21T10:00')); // => null
 * console.log(isoInstant('2026-11-21T10:00', { utcWithoutOffset: true })); // => 1795255200000
 * ```
 */
export function isoInstant(text: string, options: { utcWithoutOffset?: boolean } = {}): number | null {
  const m = ISO_TIME.exec(text);
  if (!m) return null;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const [hour, minute, second] = [m[4], m[5], m[6]].map((x) => (x === undefined ? 0 : Number(x))) as [
    number,
    number,
    number,
  ];
  if (m[4] !== undefined && m[8] === undefined && !options.utcWithoutOffset) return null;
  // Written years before 1970 are refused here: Date.UTC reads the years 0 to 99 as 1900 to 1999.
  if (year < 1970 || month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return null;
  if (day > (month === 2 && isLeap(year) ? 29 : DAYS_IN_MONTH[month - 1]!)) return null;
  const offsetHours = m[10] === undefined ? 0 : Number(m[10]);
  const offsetMinutes = m[11] === undefined ? 0 : Number(m[11]);
  if (offsetHours > 23 || offsetMinutes > 59) return null;
  const fraction = m[7] === undefined ? 0 : Math.floor(Number(`0${m[7]}`) * 1000);
  const local = Date.UTC(year, month - 1, day, hour, minute, second, fraction);
  const ms = local - (m[9] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000;
  return ms < MIN_MS || ms > MAX_MS ? null : ms;
}
