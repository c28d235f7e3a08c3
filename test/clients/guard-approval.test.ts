/**
 * The TypeScript client's `guard` under a review policy that asks for approval,
 * against the service on loopback, on both stores: the work does not run while
 * the decision waits; a reviewer's approval (another key) lets it run with a
 * permit token the service verifies, and the decision is confirmed; a denial
 * throws DecisionDeniedError (review.denied) and the work never runs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthzClient, DecisionDeniedError } from '../../clients/typescript/index.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from '../runtime/helpers/app.js';
import type { JsonObject } from '../helpers/json.js';

describe.each(STORE_KINDS)('guard with approval before the action (%s)', (kind) => {
  let rt: TestRuntime;
  let base: string;
  let reviewerKey: string;

  beforeAll(async () => {
    rt = await startRuntime(kind);
    reviewerKey = await rt.keyWith(['reviews:read', 'reviews:write']);
    await rt.setPolicies([
      {
        id: 'pol_wire_approval',
        name: 'wires-approved-first',
        effect: 'review',
        actions: ['payments.wire'],
        approval: { required: true, timeout_seconds: 600 },
      },
    ]);
    base = await rt.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(() => rt?.close());

  /** The open review of this agent, once the guard's decision is made. */
  const openReviewOf = async (agent: string) => {
    let found: JsonObject | undefined;
    await expect
      .poll(
        async () => {
          found = (await rt.getOk('/v1/reviews', reviewerKey)).data.find((d: JsonObject) => d.agent_id === agent);
          return found !== undefined;
        },
        { timeout: 10_000 },
      )
      .toBe(true);
    return found!;
  };

  it('waits for the approval, then runs the work with a permit and confirms', async () => {
    const client = new AuthzClient({ baseUrl: base, apiKey: rt.testKey });
    let ran: string | null = null;
    const guarded = client.guard({ agent_id: 'wire-bot-1', action: 'payments.wire' }, async (decision) => {
      ran = decision.permit_token;
      return 'sent';
    });
    const review = await openReviewOf('wire-bot-1');
    await expect.poll(() => rt.services.reviewWaiters.size, { timeout: 10_000 }).toBe(1);
    expect(ran).toBeNull();
    const r = await rt.call(reviewerKey, {
      method: 'POST',
      url: `/v1/decisions/${review.id}/review`,
      payload: { verdict: 'approve', reviewer: 'dana' },
    });
    expect(r.statusCode).toBe(200);
    expect(await guarded).toBe('sent');
    expect(ran).toMatch(/^eyJ/);
    const verified = json(
      await rt.call(rt.testKey, { method: 'POST', url: '/v1/permits/verify', payload: { token: ran } }),
    );
    expect(verified).toMatchObject({ valid: true, claims: { dec: review.id } });
    expect((await rt.getOk(`/v1/decisions/${review.id}`)).status).toBe('confirmed');
  });

  it('a denial throws DecisionDeniedError (review.denied) and the work never runs', async () => {
    const client = new AuthzClient({ baseUrl: base, apiKey: rt.testKey });
    let ran = false;
    const guarded = client.guard({ agent_id: 'wire-bot-2', action: 'payments.wire' }, () => {
      ran = true;
    });
    const settled = guarded.then(
      () => null,
      (e: unknown) => e,
    );
    const review = await openReviewOf('wire-bot-2');
    await rt.call(reviewerKey, {
      method: 'POST',
      url: `/v1/decisions/${review.id}/review`,
      payload: { verdict: 'deny', reviewer: 'dana', note: 'no' },
    });
    const error = await settled;
    expect(error).toBeInstanceOf(DecisionDeniedError);
    expect((error as DecisionDeniedError).decision).toMatchObject({
      id: review.id,
      effect: 'deny',
      reason: 'review.denied',
    });
    expect(ran).toBe(false);
  });
});
