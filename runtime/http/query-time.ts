/**
 * Times in query parameters (GET /v1/decisions/export `since`, `until`, and
 * any later date parameter): ISO 8601, a date (`2026-11-21`, midnight UTC) or
 * a date and time with `Z` or an offset. The date and time must exist (no
 * `2026-02-30`, no `24:00`, no second 60) and the instant must lie in the
 * years 1970 to 9999 (UTC); else 400 validation.invalid_field naming the
 * parameter (`details[].path` `query:<name>`). The reading itself is the
 * compiler's isoInstant (compiler/time/iso-instant.ts), which `authz replay
 * --since` uses too.
 */
import { isoInstant } from '../../compiler/index.js';
import { InvalidFieldError } from '../errors/api-error.js';

/**
 * The time of query parameter `name`.
 *
 * @example
 * queryTime('2026-11-21T10:00:00Z', 'since'); // Date 2026-11-21T10:00:00.000Z
 * queryTime('2026-02-30', 'since');           // throws InvalidFieldError (400), details [{ path: 'query:since' }]
 */
export function queryTime(value: string, name: string): Date {
  const ms = isoInstant(value);
  if (ms === null) {
    const message = `${name} must be an ISO 8601 time that exists, in the years 1970 to 9999 (UTC), such as 2026-11-21T10:00:00.000Z`;
    throw new InvalidFieldError(message, { details: [{ path: `query:${name}`, message }] });
  }
  return new Date(ms);
}
