/**
 * `guard`: decide, run the work only when allowed, then settle the decision:
 * confirm when the work succeeds, reject when it throws. The settling has
 * completed when `guard` returns or throws.
 */
import { AuthzError, DecisionDeniedError } from './errors.js';
import type { ConfirmOptions, Decision, DecisionInput } from './types.js';

/** The client calls `guard` needs (AuthzClient has them). */
export interface GuardClient {
  decideWithRequestId(input: DecisionInput): Promise<{ decision: Decision; requestId: string | null }>;
  confirm(id: string, options?: ConfirmOptions): Promise<Decision>;
  reject(id: string): Promise<Decision>;
  get(id: string, options?: { waitSeconds?: number }): Promise<Decision>;
  permit(id: string): Promise<{ permit_token: string }>;
}

/** Longest wait of one `GET /v1/decisions/:id?wait=` while a decision awaits approval. */
const APPROVAL_POLL_SECONDS = 60;

/**
 * A decision that awaits a human's approval (docs/reviews.md#the-rules) is waited
 * for; approved, it gets its permit token; denied or timed out, it is a deny.
 */
async function settledApproval(client: GuardClient, decision: Decision): Promise<Decision> {
  let current = decision;
  while (current.status === 'awaiting_approval')
    current = await client.get(current.id, { waitSeconds: APPROVAL_POLL_SECONDS });
  if (current.effect !== 'deny' && current.status === 'pending' && current.permit_token === null) {
    current = { ...current, permit_token: (await client.permit(current.id)).permit_token };
  }
  return current;
}

/** What guard confirms: the input's amounts per unit, else its amount, else the held amounts. */
function confirmation(input: DecisionInput): ConfirmOptions {
  if (input.amounts) return { amounts: input.amounts };
  return typeof input.amount === 'number' ? { amount: input.amount } : {};
}

/**
 * Runs `work` under a decision; see `AuthzClient.guard`.
 *
 * @example
 * const receipt = await guarded(client, { agent_id: 'bot-1', action: 'payments.charge', amount: 12.5 }, (d) => charge(d.permit_token));
 */
export async function guarded<T>(
  client: GuardClient,
  input: DecisionInput,
  work: (decision: Decision) => Promise<T> | T,
): Promise<T> {
  const { decision: first, requestId } = await client.decideWithRequestId(input);
  const decision = first.status === 'awaiting_approval' ? await settledApproval(client, first) : first;
  if (decision.effect === 'deny') throw new DecisionDeniedError(decision, requestId);

  let result: T;
  try {
    result = await work(decision);
  } catch (workError) {
    // The work's error is what the caller needs; a reject that fails leaves the
    // decision to expire with its TTL (which releases any budget hold).
    await client.reject(decision.id).catch(() => undefined);
    throw workError;
  }
  try {
    await client.confirm(decision.id, confirmation(input));
  } catch (error) {
    if (error instanceof AuthzError) error.result = result;
    throw error;
  }
  return result;
}
