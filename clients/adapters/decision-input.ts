/**
 * What the framework adapters share: how a tool call's input becomes a
 * decision request, and the labels its result carries. The tool's arguments
 * are bound to the permit (`args_digest`, as the MCP proxy does) and passed to
 * conditions as `context.tool.arguments`, with the framework's call id as
 * `context.tool.call_id`. A tool that declares `labels` adds them to the
 * decision's session before its result is returned (docs/adapters.md#labels-a-tool-result-carries).
 */
import { argsDigest } from '../../permit-verifier/args-digest.js';
import type { AuthzClient, Decision, DecisionInput } from '../typescript/index.js';

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
  /**
   * The labels the tool's results carry (`private` for a tool that reads private
   * files, `untrusted` for one that fetches web pages), fixed or from the call's
   * input and result: added to the decision's session (the client's `sessionId`)
   * before the result is returned, so the session's next decisions see them. If
   * they cannot be added, the result is not returned (the call fails).
   */
  labels?: readonly string[] | ((input: INPUT, result: unknown) => readonly string[] | undefined);
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
export function decisionInput<INPUT>(
  auth: ToolAuthorization<INPUT>,
  callId: string | undefined,
  input: INPUT,
): DecisionInput {
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

/**
 * Adds the labels a call's result carries to its decision's session (nothing
 * when the tool declares none, or the decision has no session); throws when
 * the service refuses them, so the caller withholds the result.
 *
 * @example
 * ```ts
 * const result = await files.read(path);
 * await labelResult({ authz, agent_id: 'bot-1', action: 'files.read', labels: ['private'] }, decision, { path }, result);
 * return result; // the session now holds "private"
 * ```
 */
export async function labelResult<INPUT>(
  auth: ToolAuthorization<INPUT>,
  decision: Decision,
  input: INPUT,
  result: unknown,
): Promise<void> {
  const labels = typeof auth.labels === 'function' ? auth.labels(input, result) : auth.labels;
  if (!labels || labels.length === 0 || !decision.session_id) return;
  await auth.authz.addLabels({
    labels: [...labels],
    agent_id: auth.agent_id,
    session_id: decision.session_id,
    detail: `result of ${auth.action} (decision ${decision.id})`,
  });
}
