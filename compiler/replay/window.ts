/**
 * `authz replay --since`: a duration back from the service's current time
 * (`30m`, `12h`, `7d`; also `s` and `w`) or an ISO 8601 time.
 */
import { isoInstant } from '../time/iso-instant.js';

export type Since = { kind: 'relative'; ms: number; text: string } | { kind: 'absolute'; iso: string };

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 };

/**
 * Reads a `--since` value; undefined when it is neither a duration nor an ISO time.
 *
 * @example parseSince('7d') // => { kind: 'relative', ms: 604800000, text: '7d' }
 */
export function parseSince(text: string): Since | undefined {
  const m = /^(\d+)([smhdw])$/.exec(text.trim());
  if (m) {
    const ms = Number(m[1]) * UNIT_MS[m[2]!]!;
    return ms > 0 && Number.isSafeInteger(ms) ? { kind: 'relative', ms, text } : undefined;
  }
  // An ISO 8601 date or date-time that exists, in the years 1970 to 9999 (2026-02-30 is refused, not read as
  // March 2); a date alone is midnight UTC, a time without an offset is UTC too.
  const t = isoInstant(text.trim(), { utcWithoutOffset: true });
  return t === null ? undefined : { kind: 'absolute', iso: new Date(t).toISOString() };
}

/** The window's start as an ISO time, given the service's current time (ms since the epoch). */
export function windowStart(since: Since, serviceNow: number): string {
  return since.kind === 'absolute' ? since.iso : new Date(serviceNow - since.ms).toISOString();
}
