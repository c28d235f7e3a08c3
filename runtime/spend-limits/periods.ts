/**
 * Budget periods on UTC calendar boundaries (docs/budgets-and-limits.md#budgets: an hour, a day,
 * a week starting Monday 00:00, a calendar month, a calendar year. The period of
 * an instant is [start, end); `end` is when the budget resets.
 */
import type { BudgetPeriod } from '../../compiler/index.js';

export interface PeriodBounds {
  /** ms since the epoch, inclusive. */
  start: number;
  /** ms since the epoch, exclusive: the reset. */
  end: number;
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

export function periodBounds(period: BudgetPeriod, nowMs: number): PeriodBounds {
  const d = new Date(nowMs);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  switch (period) {
    case 'hourly': {
      const start = Math.floor(nowMs / HOUR) * HOUR;
      return { start, end: start + HOUR };
    }
    case 'daily': {
      const start = Date.UTC(y, m, d.getUTCDate());
      return { start, end: start + DAY };
    }
    case 'weekly': {
      // getUTCDay: 0 = Sunday; weeks start on Monday.
      const start = Date.UTC(y, m, d.getUTCDate() - ((d.getUTCDay() + 6) % 7));
      return { start, end: start + 7 * DAY };
    }
    case 'monthly':
      return { start: Date.UTC(y, m, 1), end: Date.UTC(y, m + 1, 1) };
    case 'yearly':
      return { start: Date.UTC(y, 0, 1), end: Date.UTC(y + 1, 0, 1) };
  }
}
