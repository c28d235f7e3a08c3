/**
 * `authz replay` streams: a real `node bin/authz.js replay` child reads a chunked
 * export of 50,000 decisions (about 4 KB each, 200 MB in all) served on
 * 127.0.0.1. The server holds the stream after 20,000 lines until the child has
 * printed its count of 20,000 (it cannot, unless it replays while reading), and
 * again at the end until the child has counted 50,000. The child's resident
 * memory (/proc/PID/status) is read at both pauses: 30,000 more decisions
 * (120 MB) must not grow it by more than a fraction of that.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, eachLine, ROOT } from '../../helpers/server-process.js';
import { KEY, startExportServer, storedDecision, type ExportServer } from './export-server.js';

const TOTAL = 50_000;
const FIRST_PAUSE = 20_000;
const PADDING = 'x'.repeat(4000);

beforeAll(() => ensureBuilt(), 120_000);

let server: ExportServer | undefined;
afterAll(async () => server?.close());

/** Resident set size of a process, in bytes (Linux). */
function rss(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS for ${pid}`);
  return Number(m[1]) * 1024;
}

/** Resolves when `predicate` holds for one of the lines seen so far or to come. */
function waiter(lines: string[]) {
  const pending: Array<{ test: (l: string) => boolean; resolve: () => void }> = [];
  return {
    push(line: string) {
      lines.push(line);
      for (const p of [...pending]) {
        if (!p.test(line)) continue;
        pending.splice(pending.indexOf(p), 1);
        p.resolve();
      }
    },
    until(test: (l: string) => boolean): Promise<void> {
      if (lines.some(test)) return Promise.resolve();
      return new Promise((resolve) => pending.push({ test, resolve }));
    },
  };
}

describe('authz replay reads the export as a stream', () => {
  it('counts before the export ends, in flat memory', async () => {
    // Every fourth decision: a refund of 40 over chat, allowed; the candidate allows only up to 30.
    const line = (i: number) =>
      JSON.stringify(
        storedDecision(
          `dec_${i}`,
          {
            agent_id: `support-bot-${i % 7}`,
            action: 'payments.refund',
            resource: `order:${i}`,
            amount: i % 4 === 0 ? 40 : 10,
            context: { channel: 'chat', note: PADDING },
          },
          { effect: 'allow', reason: 'policy.matched', policy_id: 'pol_support_refund_small_chat' },
        ),
      );
    const stderr: string[] = [];
    const progress = waiter(stderr);
    const samples: number[] = [];
    let child: ReturnType<typeof spawn> | undefined;
    const counted = (n: number) => (l: string) => l.startsWith(`replay: ${n} decisions replayed`);
    server = await startExportServer({
      lines: TOTAL + 1,
      line: (i) => (i < TOTAL ? line(i) : ''), // a last empty line: the pause below comes after line TOTAL
      gate: async (i) => {
        if (i === FIRST_PAUSE || i === TOTAL) {
          await progress.until(counted(i));
          samples.push(rss(child!.pid!));
        }
      },
    });
    const candidate = join(ROOT, 'test', 'compiler', 'cli', 'fixtures', 'small-refunds-30.yaml');
    child = spawn(
      process.execPath,
      [
        join(ROOT, 'bin', 'authz.js'),
        'replay',
        candidate,
        '--url',
        server.url,
        '--key',
        KEY,
        '--since',
        '2026-11-01',
        '--format',
        'json',
      ],
      {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    child.stdout!.setEncoding('utf8').on('data', (t: string) => void (stdout += t));
    eachLine(child.stderr!, (l) => progress.push(l));
    const code = await new Promise<number | null>((resolve) => child!.on('close', resolve));

    expect(stderr.filter((l) => !l.startsWith('replay: '))).toEqual([]);
    expect(code).toBe(1);
    const out = JSON.parse(stdout);
    expect(out.replayed).toBe(TOTAL);
    expect(out.changed).toBe(TOTAL / 4);
    expect(out.changes[0]).toEqual({
      decision_id: 'dec_0',
      from: { effect: 'allow', reason: 'policy.matched' },
      to: { effect: 'deny', reason: 'policy.not_found' },
    });
    expect(out.changes.at(-1).decision_id).toBe(`dec_${TOTAL - 4}`);
    // The counts came while the export was held open, in order.
    // (a line every 10,000, and one more each second the count moves).
    const counts = stderr.filter((l) => l.startsWith('replay: ')).map((l) => Number(/(\d+) decisions/.exec(l)![1]));
    expect(counts).toEqual([...counts].sort((a, b) => a - b));
    expect(counts.filter((n) => n % 10_000 === 0)).toEqual([10_000, 20_000, 30_000, 40_000, 50_000]);
    expect(samples).toHaveLength(2);
    const grew = samples[1]! - samples[0]!;
    console.log(
      `authz replay child RSS at ${FIRST_PAUSE} and ${TOTAL} decisions: ${samples.map((b) => (b / 2 ** 20).toFixed(1)).join(' -> ')} MiB`,
    );
    expect(grew, `RSS ${samples.map((b) => (b / 2 ** 20).toFixed(0)).join(' -> ')} MiB`).toBeLessThan(40 * 2 ** 20);
  }, 120_000);
});
