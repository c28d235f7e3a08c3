/** Budget periods on UTC calendar boundaries (docs/budgets-and-limits.md#budgets; weeks start Monday). */
import { describe, expect, it } from 'vitest';
import { periodBounds } from '../../../runtime/spend-limits/periods.js';
import type { BudgetPeriod } from '../../../compiler/policy/types.js';

const at = (iso: string) => Date.parse(iso);
const bounds = (period: BudgetPeriod, iso: string) => {
  const b = periodBounds(period, at(iso));
  return [new Date(b.start).toISOString(), new Date(b.end).toISOString()];
};

describe('periodBounds', () => {
  it('hourly: the UTC hour', () => {
    expect(bounds('hourly', '2026-11-21T10:59:59.999Z')).toEqual([
      '2026-11-21T10:00:00.000Z',
      '2026-11-21T11:00:00.000Z',
    ]);
    expect(bounds('hourly', '2026-12-31T23:30:00.000Z')).toEqual([
      '2026-12-31T23:00:00.000Z',
      '2027-01-01T00:00:00.000Z',
    ]);
  });

  it('daily: UTC midnight to midnight, whatever the local zone', () => {
    expect(bounds('daily', '2026-11-21T00:00:00.000Z')).toEqual([
      '2026-11-21T00:00:00.000Z',
      '2026-11-22T00:00:00.000Z',
    ]);
    expect(bounds('daily', '2026-11-21T23:59:59.999Z')).toEqual([
      '2026-11-21T00:00:00.000Z',
      '2026-11-22T00:00:00.000Z',
    ]);
  });

  it('weekly: Monday 00:00 UTC to the next Monday', () => {
    // 2026-11-23 is a Monday.
    expect(bounds('weekly', '2026-11-23T00:00:00.000Z')).toEqual([
      '2026-11-23T00:00:00.000Z',
      '2026-11-30T00:00:00.000Z',
    ]);
    expect(bounds('weekly', '2026-11-22T23:59:59.999Z')).toEqual([
      '2026-11-16T00:00:00.000Z',
      '2026-11-23T00:00:00.000Z',
    ]); // Sunday
    expect(bounds('weekly', '2026-11-25T12:00:00.000Z')).toEqual([
      '2026-11-23T00:00:00.000Z',
      '2026-11-30T00:00:00.000Z',
    ]); // Wednesday
    // A week across a year end: 2026-12-28 is a Monday.
    expect(bounds('weekly', '2027-01-01T08:00:00.000Z')).toEqual([
      '2026-12-28T00:00:00.000Z',
      '2027-01-04T00:00:00.000Z',
    ]);
  });

  it('monthly: calendar months of 28, 29, 30 and 31 days', () => {
    expect(bounds('monthly', '2026-11-30T23:59:59.999Z')).toEqual([
      '2026-11-01T00:00:00.000Z',
      '2026-12-01T00:00:00.000Z',
    ]);
    expect(bounds('monthly', '2026-12-31T23:59:59.999Z')).toEqual([
      '2026-12-01T00:00:00.000Z',
      '2027-01-01T00:00:00.000Z',
    ]);
    expect(bounds('monthly', '2027-02-28T12:00:00.000Z')).toEqual([
      '2027-02-01T00:00:00.000Z',
      '2027-03-01T00:00:00.000Z',
    ]);
    // 2028 is a leap year: February has 29 days.
    expect(bounds('monthly', '2028-02-29T23:59:59.999Z')).toEqual([
      '2028-02-01T00:00:00.000Z',
      '2028-03-01T00:00:00.000Z',
    ]);
    expect(bounds('monthly', '2028-03-01T00:00:00.000Z')).toEqual([
      '2028-03-01T00:00:00.000Z',
      '2028-04-01T00:00:00.000Z',
    ]);
  });

  it('yearly: January 1st UTC, leap years included', () => {
    expect(bounds('yearly', '2028-02-29T10:00:00.000Z')).toEqual([
      '2028-01-01T00:00:00.000Z',
      '2029-01-01T00:00:00.000Z',
    ]);
    expect(bounds('yearly', '2026-12-31T23:59:59.999Z')).toEqual([
      '2026-01-01T00:00:00.000Z',
      '2027-01-01T00:00:00.000Z',
    ]);
  });

  it('every instant lies in its period, and the next period starts where it ends', () => {
    const periods: BudgetPeriod[] = ['hourly', 'daily', 'weekly', 'monthly', 'yearly'];
    for (let t = at('2027-12-25T00:00:00Z'); t < at('2028-03-10T00:00:00Z'); t += 5 * 3_600_000 + 17_000) {
      for (const p of periods) {
        const b = periodBounds(p, t);
        expect(b.start <= t && t < b.end, `${p} at ${new Date(t).toISOString()}`).toBe(true);
        expect(periodBounds(p, b.end).start).toBe(b.end);
        expect(periodBounds(p, b.end - 1).start).toBe(b.start);
      }
    }
  });
});
