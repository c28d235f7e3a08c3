/**
 * The allow decision the permit benches sign (bench/permits/sign.ts,
 * sign-worker.ts): decision `i` of agent bench-1, evaluated now on a manual clock.
 */
import { ManualClock } from '../../runtime/clock.js';
import type { DecisionRow } from '../../runtime/store/decisions.js';

const clock = new ManualClock(Date.now());

/** Decision `i` (its id's digits), allowed, expiring in 300 s. */
export const benchDecision = (i: number): DecisionRow => ({
  account_id: 'acc_bench',
  environment: 'test',
  id: `dec_${String(i).padStart(24, '0')}`,
  agent_id: 'bench-1',
  action: 'orders.read',
  resource: 'order:1',
  amount: null,
  context: null,
  effect: 'allow',
  reason: 'policy.matched',
  policy_id: 'pol_bench',
  matched_policy_ids: ['pol_bench'],
  warnings: [],
  status: 'pending',
  evaluated_at: new Date(clock.now()),
  expires_at: new Date(clock.now() + 300_000),
  ttl_seconds: 300,
  permit_token: null,
  resolved_at: null,
  confirmed_amount: null,
  session_id: null,
  on_behalf_of: null,
  args_digest: null,
  key_id: null,
  shadow: null,
  review_status: null,
  reviewer: null,
  review_note: null,
  reviewed_at: null,
  reviewer_key_id: null,
  approval_expires_at: null,
});
