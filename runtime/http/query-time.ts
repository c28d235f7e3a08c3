/**
 * Times in query parameters (GET /v1/decisions/export `since`, `until`, and
 * any later date parameter): ISO 8601, a date (`2026-11-21`, midnight UTC) or
 * a date and time with `Z` or an offset. The date and time must exist (no
 * `2026-02-30`, no `24:00`, no second 60) and the instant must lie in the
 * years 1970 to 9999 (UTC); else 400 validation.invalid_field naming the
 * parameter (`details[].path` `query:<name>`).
 */
import { InvalidFieldError } from '../errors/api-error.js';

const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?(Z|([+-])(\d{2}):(\d{2})))?$/;

/** The first and last instants accepted (ms): 1970-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z. */
export const QUERY_TIME_MIN_MS = 0;
export const QUERY_TIME_MAX_MS = Date.UTC(10_000, 0, 1) - 1;

/** The instant `value` names (ms), or null when it is not such a time or does not exist. */
function instant(value: string): number | null {
  const m = ISO_TIME.exec(value);
  if (!m) return null;
  const [year, month, day, hour = 0, minute = 0, second = 0] = [m[1], m[2], m[3], m[4], m[5], m[6]].map((x) => (x === undefined ? undefined : Number(x))) as number[];
  if (month! < 1 || month! > 12 || day! < 1 || hour > 23 || minute > 59 || second > 59) return null;
  const lastDay = month === 2 && isLeap(year!) ? 29 : DAYS_IN_MONTH[month! - 1]!;
  if (day! > lastDay) return null;
  const offsetHours = m[10] === undefined ? 0 : Number(m[10]);
  const offsetMinutes = m[11] === undefined ? 0 : Number(m[11]);
  if (offsetHours > 23 || offsetMinutes > 59) return null;
  const fraction = m[7] === undefined ? 0 : Math.floor(Number(`0${m[7]}`) * 1000);
  const local = Date.UTC(year!, month! - 1, day!, hour, minute, second, fraction);
  const offset = (m[9] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000;
  // Date.UTC maps the years 0 to 99 to 1900 to 1999: queryTime refuses them by the written year.
  return local - offset;
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function isLeap(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

/**
 * The time of query parameter `name`.
 *
 * @example
 * queryTime('2026-11-21T10:00:00Z', 'since'); // Date 2026-11-21T10:00:00.000Z
 * queryTime('2026-02-30', 'since');           // throws InvalidFieldError (400), details [{ path: 'query:since' }]
 */
export function queryTime(value: string, name: string): Date {
  const ms = instant(value);
  if (ms === null || year(value) < 1970 || ms < QUERY_TIME_MIN_MS || ms > QUERY_TIME_MAX_MS) {
    const message = `${name} must be an ISO 8601 time that exists, in the years 1970 to 9999 (UTC), such as 2026-11-21T10:00:00.000Z`;
    throw new InvalidFieldError(message, { details: [{ path: `query:${name}`, message }] });
  }
  return new Date(ms);
}

const year = (value: string): number => Number(value.slice(0, 4));
