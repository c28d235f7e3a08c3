/**
 * A preload for benchmarks only (`node --expose-gc --import <this> ...`),
 * never part of the proxy as shipped: on SIGUSR2 the process reads
 * `process.memoryUsage()`, runs a full GC (when node has `--expose-gc`),
 * reads it again and prints one line to stderr,
 * `memory-probe {"before":{"rss":…,"heapTotal":…,"heapUsed":…,…},"spaces":{"new_space":…,…},"after":{…},"gc":true}`
 * (bytes; `spaces`: the size of each V8 heap space before the GC), so
 * bench/mcp/sessions.ts can tell retained objects from memory the allocator
 * keeps.
 */
import { getHeapSpaceStatistics } from 'node:v8';

process.on('SIGUSR2', () => {
  const gc = (globalThis as { gc?: () => void }).gc;
  const before = process.memoryUsage();
  const spaces = Object.fromEntries(getHeapSpaceStatistics().map((s) => [s.space_name, s.space_size]));
  gc?.();
  process.stderr.write(
    `memory-probe ${JSON.stringify({ before, spaces, after: process.memoryUsage(), gc: gc !== undefined })}\n`,
  );
});
