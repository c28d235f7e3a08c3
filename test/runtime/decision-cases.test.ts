/**
 * Decision cases as data (test/cases/README.md): every test/cases/decisions/*.yaml
 * file installs its policies and agents in a fresh runtime, then sends its
 * requests in order and compares each decision with the one expected, on both
 * stores. The runner checks the files' shape first, so a misspelt key fails the
 * case instead of being ignored.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import type { Policy } from '../../compiler/policy/types.js';
import { REPO_ROOT } from '../helpers/docs-error-codes.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { expectError, postDecision } from '../helpers/kit.js';
import { startRuntime, type TestRuntime } from './helpers/app.js';

const CASES_DIR = join(REPO_ROOT, 'test', 'cases', 'decisions');

const Expectation = z.strictObject({
  status: z.number().int().optional(),
  code: z.string().optional(),
  effect: z.enum(['allow', 'deny', 'review']).optional(),
  reason: z.string().optional(),
  policy_id: z.string().nullable().optional(),
  decision_status: z.string().optional(),
  matched_policy_ids: z.array(z.string()).optional(),
  warnings: z.array(z.string()).optional(),
});

const Step = z.union([
  z.strictObject({ request: z.record(z.string(), z.unknown()), expect: Expectation, name: z.string().optional() }),
  z.strictObject({ confirm: z.number().int().min(0), amount: z.number().optional() }),
  z.strictObject({ reject: z.number().int().min(0) }),
  z.strictObject({ advance_seconds: z.number().positive() }),
]);

const CaseFile = z.strictObject({
  description: z.string().min(1),
  policies: z.array(z.record(z.string(), z.unknown())).min(1),
  agents: z
    .record(
      z.string(),
      z.strictObject({ attributes: z.record(z.string(), z.unknown()).optional(), revoked: z.boolean().optional() }),
    )
    .optional(),
  steps: z.array(Step).min(1),
});
type CaseFile = z.infer<typeof CaseFile>;
type Expectation = z.infer<typeof Expectation>;

/** The case files, by name, parsed and checked. */
function loadCases(): Array<[string, CaseFile]> {
  return readdirSync(CASES_DIR)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => [f, CaseFile.parse(parse(readFileSync(join(CASES_DIR, f), 'utf8')))]);
}

const CASES = loadCases();

/** What a decision answer says, in the terms of an expectation. */
interface Answer {
  id: string;
  effect: string;
  reason: string;
  policy_id: string | null;
  status: string;
  metadata: { matched_policy_ids: string[]; warnings: Array<{ code: string }> };
}

function expectDecision(answer: Answer, want: Expectation, where: string): void {
  if (want.effect !== undefined) expect(answer.effect, where).toBe(want.effect);
  if (want.reason !== undefined) expect(answer.reason, where).toBe(want.reason);
  if (want.policy_id !== undefined) expect(answer.policy_id, where).toBe(want.policy_id);
  if (want.decision_status !== undefined) expect(answer.status, where).toBe(want.decision_status);
  if (want.matched_policy_ids !== undefined)
    expect([...answer.metadata.matched_policy_ids].sort(), where).toEqual([...want.matched_policy_ids].sort());
  if (want.warnings !== undefined)
    expect(answer.metadata.warnings.map((w) => w.code).sort(), where).toEqual([...want.warnings].sort());
}

describe('decision cases (test/cases/decisions)', () => {
  it('finds the case files', () => {
    expect(CASES.length).toBeGreaterThanOrEqual(8);
  });

  describe.each(STORE_KINDS)('%s store', (kind) => {
    describe.each(CASES)('%s', (_file, c) => {
      let rt: TestRuntime;
      beforeAll(async () => {
        rt = await startRuntime(kind);
        await rt.setPolicies(c.policies as unknown as Policy[]);
        for (const [agentId, a] of Object.entries(c.agents ?? {})) {
          const path = `/v1/agents/${encodeURIComponent(agentId)}`;
          if (a.attributes) {
            const r = await rt.call(rt.testKey, { method: 'PUT', url: path, payload: { attributes: a.attributes } });
            expect(r.statusCode, r.body).toBe(200);
          }
          if (a.revoked) {
            // Revoking needs a known agent: one that has attributes or has asked once.
            if (!a.attributes) await postDecision(rt, { agent_id: agentId, action: 'cases.register' });
            const r = await rt.call(rt.testKey, { method: 'POST', url: `${path}/revoke` });
            expect(r.statusCode, r.body).toBe(200);
          }
        }
      });
      afterAll(async () => {
        await rt?.close();
      });

      it(c.description, async () => {
        const decided: Array<Answer | null> = [];
        for (const [i, step] of c.steps.entries()) {
          const where = `step ${i}`;
          if ('request' in step) {
            const r = await postDecision(rt, step.request);
            const status = step.expect.status ?? 200;
            if (status !== 200) {
              expectError(r, status, step.expect.code ?? expect.fail(`${where}: an error status needs its code`));
              decided.push(null);
              continue;
            }
            expect(r.statusCode, `${where}: ${r.body}`).toBe(200);
            const answer = r.json() as Answer;
            expectDecision(answer, step.expect, `${where} (${step.name ?? JSON.stringify(step.request)})`);
            decided.push(answer);
          } else if ('confirm' in step || 'reject' in step) {
            const index = 'confirm' in step ? step.confirm : step.reject;
            const target = decided[index];
            if (!target) return expect.fail(`${where}: step ${index} made no decision`);
            const verb = 'confirm' in step ? 'confirm' : 'reject';
            const payload = 'confirm' in step && step.amount !== undefined ? { amount: step.amount } : {};
            const r = await rt.call(rt.testKey, { method: 'POST', url: `/v1/decisions/${target.id}/${verb}`, payload });
            expect(r.statusCode, `${where}: ${r.body}`).toBe(200);
            decided.push(null);
          } else {
            rt.clock.advance(step.advance_seconds);
            decided.push(null);
          }
        }
      });
    });
  });
});
