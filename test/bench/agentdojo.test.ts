/**
 * AgentDojo's traces replayed as decisions through the service (bench/agentdojo:
 * the policy pack from the tool classification, the replay of data/README.md),
 * on both stores, for the banking suite and each pack rule. The service's
 * figures must equal a reference written here from the classification alone:
 * walk each session's calls, a read adds its tool's labels, an exit is
 * stopped when the rule's labels are present. So the test fails when policy
 * labels do not join the session, when a condition misreads session.labels, or
 * when the replay counts wrongly.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileSources, packageRoot } from '../../compiler/index.js';
import { PACK_RULES, suitePack, toolLabels, type PackRule } from '../../bench/agentdojo/pack.js';
import { callsUntilInjection, replaySuite, type SuiteResult } from '../../bench/agentdojo/replay.js';
import { loadTraces, type Call, type Suite } from '../../bench/agentdojo/traces.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { decide } from '../helpers/kit.js';
import { startRuntime, type TestRuntime } from '../runtime/helpers/app.js';

const SUITE = 'banking';
const traces = loadTraces();
const suite = traces.suites[SUITE]!;

const needs: Record<PackRule, string[]> = { 'untrusted-exit': ['untrusted'], trifecta: ['private', 'untrusted'] };

/** Whether any exit call in `calls` is stopped, walking labels as the reference understands the pack. */
function referenceStops(s: Suite, rule: PackRule, calls: readonly Call[]): boolean[] {
  const labels = new Set<string>();
  return calls.map((c) => {
    const tool = s.tools[c.function]!;
    const stopped = tool.is_exit && needs[rule].every((l) => labels.has(l));
    if (!stopped) for (const l of toolLabels(tool)) labels.add(l);
    return stopped;
  });
}

function reference(s: Suite, rule: PackRule): SuiteResult {
  let untouched = 0;
  for (const t of s.user_tasks) if (!referenceStops(s, rule, t.calls).some(Boolean)) untouched++;
  let [pairs, stoppable, stopped] = [0, 0, 0];
  for (const t of s.user_tasks) {
    const prefix = callsUntilInjection(s, t);
    for (const inj of s.injection_tasks) {
      pairs++;
      if (inj.calls.some((c) => s.tools[c.function]!.is_exit)) stoppable++;
      if (
        referenceStops(s, rule, [...prefix, ...inj.calls])
          .slice(prefix.length)
          .some(Boolean)
      )
        stopped++;
    }
  }
  return { suite: SUITE, userTasks: s.user_tasks.length, untouched, pairs, stoppable, stopped };
}

describe('the AgentDojo pack', () => {
  it('compiles for every suite and rule, and reads only the classification', () => {
    for (const [name, s] of Object.entries(traces.suites))
      for (const rule of PACK_RULES) {
        const { table, diagnostics } = compileSources([{ file: `${name}.yaml`, text: suitePack(name, s, rule) }]);
        expect(diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
        expect(table).not.toBeNull();
      }
    // No task name, id or argument appears in a pack.
    const text = suitePack(SUITE, suite, 'trifecta');
    for (const t of [...suite.user_tasks, ...suite.injection_tasks]) expect(text).not.toContain(t.id);
  });

  it('ships the trifecta pack in examples/agentdojo/, as the generator writes it', () => {
    for (const [name, s] of Object.entries(traces.suites))
      expect(
        readFileSync(join(packageRoot(), 'examples', 'agentdojo', `${name}.yaml`), 'utf8'),
        `examples/agentdojo/${name}.yaml: npm run bench:agentdojo -- --write-examples`,
      ).toBe(suitePack(name, s, 'trifecta'));
  });

  it('the reference stops nothing without labels: an exit first in a session is allowed', () => {
    const exit = Object.keys(suite.tools).find((t) => suite.tools[t]!.is_exit)!;
    expect(referenceStops(suite, 'untrusted-exit', [{ function: exit, args: {} }])).toEqual([false]);
  });
});

for (const kind of STORE_KINDS) {
  describe(`AgentDojo ${SUITE} replayed through the service (${kind})`, () => {
    let rt: TestRuntime;
    beforeAll(async () => {
      rt = await startRuntime(kind);
    });
    afterAll(() => rt.close());

    for (const rule of PACK_RULES) {
      it(`rule ${rule}: stopped injection pairs and untouched user tasks equal the reference`, async () => {
        const { table } = compileSources([{ file: `${SUITE}.yaml`, text: suitePack(SUITE, suite, rule) }]);
        await rt.setPolicies(table!.rows.map((row) => row.policy));
        const result = await replaySuite(
          SUITE,
          suite,
          async (req) => (await decide(rt, req)).effect,
          `${kind}-${rule}`,
        );
        const expected = reference(suite, rule);
        expect(result).toEqual(expected);
        // The pack does something: some injection pairs are stopped, and not every user task is (utility is measured, not assumed).
        expect(result.stopped).toBeGreaterThan(0);
        expect(result.untouched).toBeGreaterThan(0);
      }, 120_000);
    }
  });
}
