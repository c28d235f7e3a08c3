/**
 * The quiet default log's summary (runtime/http/request-summary.ts): counts by
 * status class and the slowest answer, reset at each line; no line for a
 * quiet interval; the periodic writer (a short interval here, polled) and its
 * last line at the stop.
 */
import { describe, expect, it } from 'vitest';
import { RequestSummary, startRequestSummary } from '../../runtime/http/request-summary.js';

const AT = new Date('2026-11-26T16:01:00.000Z');

describe('RequestSummary', () => {
  it('one line of what was answered since the last, then a fresh start', () => {
    const s = new RequestSummary();
    expect(s.take('in the last 60 s', AT)).toBeNull();
    for (let i = 0; i < 1180; i++) s.record(200, 1.2);
    for (let i = 0; i < 24; i++) s.record(404, 0.8);
    s.record(503, 37.6);
    expect(s.take('in the last 60 s', AT)).toBe(
      '2026-11-26T16:01:00.000Z requests in the last 60 s: 1,205 (2xx 1,180, 4xx 24, 5xx 1); slowest 38 ms',
    );
    expect(s.take('in the last 60 s', AT)).toBeNull();
    s.record(302, 2);
    expect(s.take('since the last summary', AT)).toBe(
      '2026-11-26T16:01:00.000Z requests since the last summary: 1 (2xx 0, 3xx 1, 4xx 0, 5xx 0); slowest 2 ms',
    );
  });

  it('writes a line every interval when requests came, and what is left at the stop', async () => {
    const s = new RequestSummary();
    const lines: string[] = [];
    const writer = startRequestSummary(
      s,
      20,
      () => AT.getTime(),
      (l) => lines.push(l),
    );
    try {
      s.record(200, 3);
      await expect.poll(() => lines.length, { timeout: 5_000, interval: 10 }).toBe(1);
      expect(lines[0]).toBe('2026-11-26T16:01:00.000Z requests in the last 0 s: 1 (2xx 1, 4xx 0, 5xx 0); slowest 3 ms');
      s.record(401, 1);
    } finally {
      writer.stop();
    }
    expect(lines.at(-1)).toMatch(
      /requests (in the last 0 s|since the last summary): 1 \(2xx 0, 4xx 1, 5xx 0\); slowest 1 ms$/,
    );
  });
});
