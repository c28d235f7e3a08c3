/**
 * What the framework adapters share: how a tool call's input becomes a
 * decision request. The tool's arguments are bound to the permit
 * (`args_digest`, as the MCP proxy does) and passed to conditions as
 * `context.tool.arguments`, with the framework's call id as
 * `context.tool.call_id`.
 */
import { argsDigest } from '../../verifier/args-digest.js';
import type { AuthzClient, DecisionInput } from '../typescript/index.js';

/** How calls of one tool are decided. */
export interface ToolAuthorization<INPUT> {
  /** The client (its `sessionId` and `onBehalfOf` fill every decision). */
  authz: AuthzClient;
  /** The agent the calls are made for. */
  agent_id: string;
  /** The action decided for each call (`namespace.verb`). */
  action: string;
  /** The resource: a fixed string, or taken from the call's input. */
  resource?: string | ((input: INPUT) => string | undefined);
  /** The amount (fiat budgets) from the call's input. */
  amount?: (input: INPUT) => number | undefined;
  /** Extra `context` for policy conditions, beside `context.tool`. */
  context?: (input: INPUT) => Record<string, unknown>;
  /** Decision (and permit) lifetime, 1..3600 s. */
  ttl_seconds?: number;
}

/**
 * The decision request for one call.
 *
 * @example
 * ```ts
 * const input = decisionInput({ authz, agent_id: 'bot-1', action: 'payments.refund', resource: (i) => `order:${i.order_id}`, amount: (i) => i.amount }, 'call_1', { order_id: '7', amount: 20 });
 * console.log(input.resource, input.amount, input.context); // => order:7 20 { tool: { call_id: 'call_1', arguments: { order_id: '7', amount: 20 } } }
 * ```
 */
export function decisionInput<INPUT>(auth: ToolAuthorization<INPUT>, callId: string | undefined, input: INPUT): DecisionInput {
  const resource = typeof auth.resource === 'function' ? auth.resource(input) : auth.resource;
  const amount = auth.amount?.(input);
  return {
    agent_id: auth.agent_id,
    action: auth.action,
    ...(resource === undefined ? {} : { resource }),
    ...(amount === undefined ? {} : { amount }),
    context: { ...(auth.context?.(input) ?? {}), tool: { call_id: callId ?? null, arguments: input ?? null } },
    args_digest: argsDigest(input),
    ...(auth.ttl_seconds === undefined ? {} : { ttl_seconds: auth.ttl_seconds }),
  };
}
