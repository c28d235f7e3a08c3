/**
 * agent-authz for the OpenAI Agents SDK for JavaScript (`@openai/agents`): a
 * function tool whose every call is decided by agent-authz, with review mapped
 * to the SDK's human-in-the-loop interruption (`needsApproval`).
 *
 * - The SDK asks `needsApproval(runContext, input, callId)` before a call: the
 *   guard decides then (one decision per call id, also across a resumed run:
 *   the decision is made under an `Idempotency-Key` derived from the call id)
 *   and answers true for a decision that awaits a human's approval in
 *   agent-authz, or, with `interruptOn: 'review'`, for every review decision.
 *   The run then stops with an interruption; `decisionFor(interruption)` gives
 *   its decision (id, reason, policy) for the approval screen.
 * - `execute`: a deny answers the model with the reason and the decision id and
 *   never runs the work; a decision still awaiting approval in agent-authz is
 *   waited for (up to `approvalWaitSeconds`: record the human's verdict with
 *   `POST /v1/decisions/:id/review` before resuming); otherwise the work runs
 *   with the decision and its permit token, and the decision is confirmed when
 *   it resolves or rejected when it throws (the error goes on to the SDK).
 * - A call the human refused never reaches `execute`: `release(interruption)`
 *   rejects its decision so that any budget hold is released at once.
 *
 * @example
 * ```ts
 * import { Agent, run } from '@openai/agents';
 * import { z } from 'zod';
 * import { createAgentsToolGuard } from 'agent-authz/adapters/openai-agents';
 *
 * const guard = createAgentsToolGuard({ authz, agent_id: 'support-bot-1', interruptOn: 'review' });
 * const refund = guard.tool({
 *   name: 'refund_order',
 *   description: 'Refund an order',
 *   parameters: z.object({ order_id: z.string(), amount: z.number() }),
 *   authorization: { action: 'payments.refund', resource: (i) => `order:${i.order_id}`, amount: (i) => i.amount },
 *   execute: async ({ order_id, amount }, { decision }) => payments.refund(order_id, amount, decision.permit_token),
 * });
 * let result = await run(new Agent({ name: 'support', tools: [refund] }), 'Refund order 1001, 80 USD');
 * while (result.interruptions.length > 0) {
 *   for (const item of result.interruptions) {
 *     if (await askSupervisor(guard.decisionFor(item))) result.state.approve(item);
 *     else (result.state.reject(item), await guard.release(item));
 *   }
 *   result = await run(agent, result.state);
 * }
 * ```
 */
import { createHash } from 'node:crypto';
import {
  tool,
  type FunctionTool,
  type RunContext,
  type RunToolApprovalItem,
  type ToolExecuteArgument,
  type ToolInputParameters,
} from '@openai/agents';
import { AuthzError, type AuthzClient, type Decision } from '../typescript/index.js';
import { decisionInput, labelResult, type ToolAuthorization } from './decision-input.js';

export interface AgentsToolGuardOptions {
  authz: AuthzClient;
  /** The agent whose calls are decided. */
  agent_id: string;
  /**
   * Which decisions stop the run for a human (`needsApproval`): `'approval'`
   * (default) those awaiting approval in agent-authz; `'review'` every review decision.
   */
  interruptOn?: 'approval' | 'review';
  /** How long `execute` waits for agent-authz to record an approval, in seconds (default 60). */
  approvalWaitSeconds?: number;
  /** Told when a decision could not be confirmed or rejected after the work (default: a warning on stderr). */
  onSettleError?: (error: unknown, decision: Decision) => void;
}

/** How one tool's calls are decided: the fields of `ToolAuthorization` the guard does not fix. */
export type AgentsToolAuthorization<INPUT> = Omit<ToolAuthorization<INPUT>, 'authz' | 'agent_id'>;

export interface GuardedAgentsTool<TParameters extends ToolInputParameters, Context> {
  name: string;
  description: string;
  /** A zod object (or JSON schema) of the tool's input, as `tool()` takes it. */
  parameters: TParameters;
  strict?: boolean;
  authorization: AgentsToolAuthorization<ToolExecuteArgument<TParameters>>;
  /** The work, run only when allowed, with the decision (its `permit_token` for downstream services). */
  execute: (
    input: ToolExecuteArgument<TParameters>,
    details: { decision: Decision; runContext?: RunContext<Context> },
  ) => unknown;
}

export interface AgentsToolGuard {
  /** A function tool decided by agent-authz (see the module comment). */
  tool<TParameters extends ToolInputParameters, Context = unknown>(
    definition: GuardedAgentsTool<TParameters, Context>,
  ): FunctionTool<Context, TParameters, unknown>;
  /** The decision of an interruption raised by one of this guard's tools. */
  decisionFor(item: RunToolApprovalItem): Decision | undefined;
  /** Rejects the decision of a call the human refused (its budget hold is released); a no-op for others. */
  release(item: RunToolApprovalItem): Promise<void>;
}

const DEFAULT_APPROVAL_WAIT_SECONDS = 60;

const callIdOf = (item: RunToolApprovalItem): string | undefined => (item.rawItem as { callId?: string }).callId;

/** The refusal text the model gets. */
function refusalText(decision: Decision): string {
  if (decision.status === 'awaiting_approval')
    return `Awaiting approval in agent-authz (decision ${decision.id}). The tool was not called.`;
  return `Denied by agent-authz: ${decision.reason} (decision ${decision.id}). The tool was not called.`;
}

/**
 * A guard for one agent's tools.
 *
 * @example
 * ```ts
 * const guard = createAgentsToolGuard({ authz, agent_id: 'support-bot-1' });
 * const lookup = guard.tool({ name: 'lookup_order', description: 'Look up an order', parameters: z.object({ order_id: z.string() }),
 *   authorization: { action: 'orders.read', resource: (i) => `order:${i.order_id}` }, execute: async ({ order_id }) => orders.get(order_id) });
 * ```
 */
export function createAgentsToolGuard(options: AgentsToolGuardOptions): AgentsToolGuard {
  const { authz, agent_id } = options;
  const interruptOn = options.interruptOn ?? 'approval';
  const waitSeconds = options.approvalWaitSeconds ?? DEFAULT_APPROVAL_WAIT_SECONDS;
  const onSettleError =
    options.onSettleError ??
    ((error: unknown, d: Decision) =>
      console.warn(`agent-authz: could not settle decision ${d.id}: ${(error as Error).message}`));
  /** Decisions made in needsApproval, by call id, until execute or release takes them. */
  const decisions = new Map<string, Decision>();

  const idempotencyKey = (callId: string) =>
    `openai-agents-${createHash('sha256').update(`${agent_id}\u0000${callId}`).digest('base64url')}`;

  async function decide<INPUT>(
    auth: AgentsToolAuthorization<INPUT>,
    callId: string | undefined,
    input: INPUT,
  ): Promise<Decision> {
    const known = callId === undefined ? undefined : decisions.get(callId);
    if (known) return known;
    const request = decisionInput({ ...auth, authz, agent_id }, callId, input);
    const decision = await authz.decide(
      request,
      callId === undefined ? {} : { idempotencyKey: idempotencyKey(callId) },
    );
    if (callId !== undefined) decisions.set(callId, decision);
    return decision;
  }

  /** Waits for agent-authz to settle a decision awaiting approval; an approved one gets its permit. */
  async function settled(first: Decision): Promise<Decision> {
    const deadline = Date.now() + waitSeconds * 1000;
    let decision = first;
    for (;;) {
      const left = Math.ceil((deadline - Date.now()) / 1000);
      if (decision.status !== 'awaiting_approval' || left < 1) break;
      decision = await authz.get(decision.id, { waitSeconds: Math.min(left, 60) });
    }
    if (decision.effect !== 'deny' && decision.status === 'pending' && !decision.permit_token) {
      decision = { ...decision, permit_token: (await authz.permit(decision.id)).permit_token };
    }
    return decision;
  }

  return {
    tool<TParameters extends ToolInputParameters, Context = unknown>(
      definition: GuardedAgentsTool<TParameters, Context>,
    ) {
      type Input = ToolExecuteArgument<TParameters>;
      const { authorization, execute, ...rest } = definition;
      const options = {
        ...rest,
        needsApproval: async (_context: RunContext, input: Input, callId?: string) => {
          const decision = await decide(authorization, callId, input);
          if (decision.effect === 'deny') return false;
          return decision.status === 'awaiting_approval' || (interruptOn === 'review' && decision.effect === 'review');
        },
        execute: async (
          input: Input,
          runContext?: RunContext<Context>,
          details?: { toolCall?: { callId?: string } },
        ) => {
          const callId = details?.toolCall?.callId;
          let decision = await decide(authorization, callId, input);
          if (callId !== undefined) decisions.delete(callId);
          if (decision.status === 'awaiting_approval') decision = await settled(decision);
          if (decision.effect === 'deny' || decision.status === 'awaiting_approval') return refusalText(decision);
          let result: unknown;
          try {
            result = await execute(input, { decision, ...(runContext ? { runContext } : {}) });
            // The labels the result carries join the session before the model sees it (failing: the call fails).
            await labelResult({ ...authorization, authz, agent_id }, decision, input, result);
          } catch (error) {
            await authz.reject(decision.id).catch((e: unknown) => onSettleError(e, decision));
            throw error;
          }
          const amount = authorization.amount?.(input);
          await authz
            .confirm(decision.id, amount === undefined ? {} : { amount })
            .catch((e: unknown) => onSettleError(e, decision));
          return result;
        },
      };
      return tool(options as unknown as Parameters<typeof tool<TParameters, Context>>[0]) as FunctionTool<
        Context,
        TParameters,
        unknown
      >;
    },

    decisionFor(item) {
      const callId = callIdOf(item);
      return callId === undefined ? undefined : decisions.get(callId);
    },

    async release(item) {
      const callId = callIdOf(item);
      const decision = callId === undefined ? undefined : decisions.get(callId);
      if (!decision || callId === undefined) return;
      decisions.delete(callId);
      if (decision.status !== 'pending') return;
      try {
        await authz.reject(decision.id);
      } catch (error) {
        if (!(error instanceof AuthzError && error.status === 409)) throw error;
      }
    },
  };
}
