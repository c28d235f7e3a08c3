/**
 * agent-authz for the Vercel AI SDK (`ai` v6): a `tool()` whose `execute` runs
 * under `AuthzClient.guard`. Each call is decided first; a deny throws
 * `DecisionDeniedError` before the work runs (the SDK hands the model a tool
 * error naming the reason and the decision id); otherwise the work runs with
 * the decision (and its permit token), and the decision is confirmed when the
 * work resolves or rejected when it throws. A decision that awaits a human's
 * approval is waited for first, as `guard` does. A tool that declares
 * `labels` adds them to the session before its result is returned.
 *
 * @example
 * ```ts
 * import { generateText, stepCountIs } from 'ai';
 * import { z } from 'zod';
 * import { guardedTool } from 'agent-authz/adapters/vercel-ai';
 *
 * const refund = guardedTool(
 *   { authz, agent_id: 'support-bot-1', action: 'payments.refund', resource: (i) => `order:${i.order_id}`, amount: (i) => i.amount },
 *   {
 *     description: 'Refund an order',
 *     inputSchema: z.object({ order_id: z.string(), amount: z.number() }),
 *     execute: async ({ order_id, amount }, { decision }) => payments.refund(order_id, amount, { permit: decision.permit_token }),
 *   },
 * );
 * await generateText({ model, tools: { refund }, stopWhen: stepCountIs(3), prompt: 'Refund order 1001, 20 USD' });
 * ```
 */
import { tool, type FlexibleSchema, type Tool, type ToolExecutionOptions } from 'ai';
import type { Decision } from '../typescript/index.js';
import { decisionInput, labelResult, type ToolAuthorization } from './decision-input.js';

export type { ToolAuthorization } from './decision-input.js';

/** The tool's own work: the SDK's execution options plus the decision it runs under. */
export type GuardedExecute<INPUT, OUTPUT> = (
  input: INPUT,
  options: ToolExecutionOptions & { decision: Decision },
) => PromiseLike<OUTPUT> | OUTPUT;

/** A tool definition as `tool()` takes it, with a guarded `execute`. */
export interface GuardedToolDefinition<INPUT, OUTPUT> {
  description?: string;
  title?: string;
  inputSchema: FlexibleSchema<INPUT>;
  strict?: boolean;
  execute: GuardedExecute<INPUT, OUTPUT>;
}

/**
 * A Vercel AI SDK tool whose every call is decided by agent-authz first.
 *
 * @param authorization - how a call is decided (agent, action, resource and amount from the input).
 * @param definition - the tool: description, input schema, and `execute(input, { decision, ...options })`.
 * @returns the `tool()` to put in `tools: { ... }`.
 * @throws from `execute`: `DecisionDeniedError` on a deny (the work did not run), `AuthzError` when
 *   no decision could be had (fails closed), or the work's own error (the decision is rejected).
 *
 * @example
 * ```ts
 * const lookup = guardedTool(
 *   { authz, agent_id: 'support-bot-1', action: 'orders.read', resource: (i) => `order:${i.order_id}` },
 *   { description: 'Look up an order', inputSchema: z.object({ order_id: z.string() }), execute: async ({ order_id }) => orders.get(order_id) },
 * );
 * ```
 */
export function guardedTool<INPUT, OUTPUT>(
  authorization: ToolAuthorization<INPUT>,
  definition: GuardedToolDefinition<INPUT, OUTPUT>,
): Tool<INPUT, OUTPUT> {
  const { execute, ...rest } = definition;
  return tool<INPUT, OUTPUT>({
    ...rest,
    execute: (input: INPUT, options: ToolExecutionOptions) =>
      authorization.authz.guard(decisionInput(authorization, options.toolCallId, input), async (decision) => {
        const result = await execute(input, { ...options, decision });
        // The labels the result carries join the session before the model sees it (failing: the call fails).
        await labelResult(authorization, decision, input, result);
        return result;
      }),
  } as unknown as Tool<INPUT, OUTPUT>);
}
