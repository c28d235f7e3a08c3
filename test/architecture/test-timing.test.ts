/**
 * No test depends on how fast the machine is (docs/benchmarks.md, docs/development.md):
 * none asserts an elapsed wall-clock time, and none sleeps a fixed time to let
 * things settle; tests wait for an event or poll the observable state. The few
 * fixed waits left are allow-listed below with the reason they are needed.
 * Figures worth keeping are measured in bench/ (bench/compiler: adversarial inputs).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { timingFindings, type TimingFinding } from './test-timing.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Fixed waits that stay: file, a piece of the line, and why. Each must match exactly one finding. */
const ALLOWED: Array<{ file: string; line: string; why: string }> = [
  {
    file: 'test/verifier/verifier.test.ts',
    line: 'await sleep(1050);',
    why: "the verifier's JWKS refetch cooldown is jose's, on the real clock: the test waits it out to see the one refetch after it",
  },
  {
    file: 'test/verifier/verifier.test.ts',
    line: 'await sleep(350);',
    why: "jose's cooldown (300 ms, real clock) must be over before a token of the rotated key can trigger a refetch",
  },
  {
    file: 'test/verifier/verifier.test.ts',
    line: 'await sleep(650);\n      await expectInvalid',
    why: "jose's cached key set (max age 600 ms, real clock) must be stale for the refetch that drops the removed key",
  },
  {
    file: 'test/verifier/verifier.test.ts',
    line: 'await sleep(650);\n      await expectCode',
    why: "jose's cached key set (max age 600 ms, real clock) must be stale before the failing refetch",
  },
];

/** The scanner's own files hold examples of what it reports. */
const SELF = ['test/architecture/test-timing.ts', 'test/architecture/test-timing.test.ts'];

function testFiles(): string[] {
  return execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', 'test'], {
    cwd: ROOT,
    encoding: 'utf8',
  })
    .split('\n')
    .filter((f) => /\.(ts|js|mjs)$/.test(f) && !SELF.includes(f));
}

const kinds = (text: string) => timingFindings('example.test.ts', text).map((f) => `${f.line}:${f.kind}`);

describe('timing in tests', () => {
  it('finds the duration assertions and settling sleeps it is about (the forms the suite had)', () => {
    // compile.test.ts, parse.test.ts: a timed call.
    expect(
      kinds(
        '    const started = performance.now();\n    f();\n    expect(performance.now() - started).toBeLessThan(200);',
      ),
    ).toEqual(['3:duration']);
    // limits-processes.test.ts: an elapsed variable, and one against a timestamp taken mid-test.
    expect(
      kinds(
        '      const started = Date.now();\n      await go();\n      const elapsedMs = Date.now() - started;\n      expect(elapsedMs).toBeLessThan(2_000);',
      ),
    ).toEqual(['4:duration']);
    expect(
      kinds(
        '      const exhaustedAt = Date.now();\n      const learnedMs = Date.now() - exhaustedAt;\n      expect(learnedMs).toBeLessThan(3_000);',
      ),
    ).toEqual(['3:duration']);
    // replication.test.ts: a helper returning the time it took.
    const until = [
      '  async function until(node: Node, done: () => boolean): Promise<number> {',
      '    const started = Date.now();',
      '    while (Date.now() - started < WITHIN_MS) {',
      '      if (done()) return Date.now() - started;',
      '      await new Promise((r) => setTimeout(r, 20));',
      '    }',
      '    throw new Error("late");',
      '  }',
      '  it("x", async () => {',
      '    const tookB = await until(b, () => true);',
      '    expect(tookB).toBeLessThan(1_500);',
      '    await until(c, () => true);',
      '  });',
    ].join('\n');
    expect(kinds(until)).toEqual(['11:duration']);
    // serve.test.ts: a property of a returned object.
    const serve =
      'async function stop() {\n  const started = Date.now();\n  return { ...result, ms: Date.now() - started };\n}\nconst stopped = await stop();\nexpect(stopped.ms).toBeLessThan(5_000);';
    expect(kinds(serve)).toEqual(['6:duration']);
    // A wall-clock offset read against the clock: also an elapsed time.
    expect(kinds('expect(now - Date.now()).toBeGreaterThan(3590_000);')).toEqual(['1:duration']);
    // replication.test.ts, webhooks-processes.test.ts: sleeping before counting.
    expect(
      kinds(
        '    await until(b, done);\n    // And it stays there.\n    await new Promise((r) => setTimeout(r, 300));\n    expect(x).toBe(1);',
      ),
    ).toEqual(['3:sleep']);
    expect(
      kinds(
        "import { setTimeout as sleep } from 'node:timers/promises';\nit('x', async () => {\n  await sleep(650);\n});",
      ),
    ).toEqual(['3:sleep']);
  });

  it('leaves polls, deadlines and timers alone', () => {
    const fine = [
      '    const deadline = Date.now() + 30_000;',
      '    while (received.size < 600 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));',
      '    for (let i = 0; i < 50; i++) {',
      '      if (ok()) return;',
      '      try {',
      '        await go();',
      '      } catch {',
      '        await sleep(20);',
      '      }',
      '      await new Promise((resolve) => setTimeout(resolve, 100));',
      '    }',
      '    await expect.poll(() => count(), { timeout: 5_000, interval: 50 }).toBe(3);',
      '    const timer = setTimeout(() => reject(new Error("late")), 10_000);',
      '    const late = await Promise.race([p.exited, sleep(10_000).then(() => true)]);',
      '    expect(retries[0]!.delayMs).toBeGreaterThanOrEqual(1000);',
      '    expect(Date.parse(d.expires_at) - Date.parse(d.evaluated_at)).toBe(60_000);',
      '    expect(wallAfter + 3600_000).toBeGreaterThanOrEqual(now);',
      // A loop header prettier wrapped over several lines.
      '    for (',
      '      let i = 0;',
      '      !(await ready());',
      '      i++',
      '    ) {',
      '      await new Promise((r) => setTimeout(r, 100));',
      '    }',
    ].join('\n');
    expect(kinds(fine)).toEqual([]);
    // ...but a wrapped call that is no loop still encloses a settling sleep.
    expect(kinds(['    call(', '      a,', '    ) {', '      await sleep(100);', '    }'].join('\n'))).toEqual([
      '4:sleep',
    ]);
  });

  it('no test in the tree asserts a duration or sleeps to settle (allow-listed waits aside)', () => {
    const files = testFiles();
    expect(files.length).toBeGreaterThan(50);
    const findings: TimingFinding[] = files.flatMap((file) =>
      timingFindings(file, readFileSync(`${ROOT}${file}`, 'utf8')),
    );
    const text = (f: TimingFinding) => {
      const lines = readFileSync(`${ROOT}${f.file}`, 'utf8').split('\n');
      return `${lines[f.line - 1]!.trim()}\n${lines[f.line]?.trim() ?? ''}`;
    };
    const allowedBy = (f: TimingFinding) =>
      ALLOWED.filter(
        (a) => a.file === f.file && f.kind === 'sleep' && `${text(f)}`.startsWith(a.line.replace(/\n\s*/g, '\n')),
      );
    const unexplained = findings
      .filter((f) => allowedBy(f).length === 0)
      .map((f) => `${f.file}:${f.line} ${f.kind}: ${f.text}`);
    expect(unexplained, 'wait for an event or poll the state instead (or allow-list it here with the reason)').toEqual(
      [],
    );
    for (const a of ALLOWED) {
      const matched = findings.filter((f) => allowedBy(f).includes(a));
      expect(matched.length, `allow-list entry ${a.file} "${a.line}" matches ${matched.length} findings, not one`).toBe(
        1,
      );
      expect(a.why.length).toBeGreaterThan(20);
    }
  });
});
