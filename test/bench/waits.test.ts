/**
 * bench/http/waits.ts reads where decisions wait from a target's Prometheus
 * text: here from the exposition of a real ServiceMetrics registry (the one
 * `GET /metrics` serves), batches observed through the same observers the
 * decision writer and the limits use.
 */
import { describe, expect, it } from 'vitest';
import { sampleValue, waitsBetween, waitsTable } from '../../bench/http/waits.js';
import { systemClock } from '../../runtime/clock.js';
import { ServiceMetrics } from '../../runtime/metrics/service-metrics.js';
import type { Sql } from '../../runtime/store/connect.js';

describe('bench waits', () => {
  // No scrape() here (it reads the store for the budget gauges): the registry's text alone.
  const metrics = new ServiceMetrics(null as unknown as Sql, systemClock);
  const text = () => metrics.registry.metrics();

  it('means per batch between two scrapes, per kind of batch', async () => {
    const [decisions, limits] = [metrics.storeBatch('decisions'), metrics.storeBatch('limits')];
    decisions(4, 0.002);
    const before = await text();
    decisions(10, 0.003);
    decisions(20, 0.005);
    limits(7, 0.001);
    const after = await text();
    expect(sampleValue(after, 'authz_store_batch_size_sum', { batch: 'decisions' })).toBe(34);
    const w = waitsBetween(before, after);
    expect(w.writeItems).toBe(15);
    expect(w.writeMs).toBeCloseTo(4, 6);
    expect(w.limitsItems).toBe(7);
    expect(w.limitsMs).toBeCloseTo(1, 6);
    // Nothing written between two scrapes: no mean.
    expect(waitsBetween(after, after).writeItems).toBeNull();
  });

  it('the report rows: the CPU bound as a share of bare Fastify', () => {
    const w = { writeItems: 15, writeMs: 2.5, limitsItems: null, limitsMs: null, loopLagMs: 0.4 };
    const lines = waitsTable(
      [{ target: 'authz serve', scenario: 'deny', rps: 10_000, machineBusy: 0.5, mainThread: 0.6, waits: [w] }],
      50_000,
      2,
    );
    expect(lines.find((l) => l.startsWith('| authz serve'))).toBe(
      '| authz serve | deny | 10000 | 50% | 60% | 20000 (40%) | 15.0, 2.50 | -, - | 0.40 |',
    );
    expect(waitsTable([], 50_000, 2)).toEqual([]);
  });
});
