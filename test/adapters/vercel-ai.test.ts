/**
 * agent-authz/adapters/vercel-ai with the Vercel AI SDK itself (`ai` v6): the
 * guarded tools run inside `generateText`, driven by the SDK's own mock model
 * (`ai/test`, no HTTP to any LLM), against a real service on loopback.
 */
import { generateText, stepCountIs, type ModelMessage } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { guardedTool } from '../../clients/adapters/vercel-ai.js';
import { DecisionDeniedError, type Decision } from '../../clients/typescript/index.js';
import { argsDigest } from '../../permit-verifier/index.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { ensureProxyBuilt } from '../mcp/helpers/proxy.js';
import { startAdapterService, supportAgent, type AdapterService } from './helpers/service.js';

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

/** A model that calls the given tools once, then answers "done". */
function scriptedModel(calls: Array<{ id: string; tool: string; input: unknown }>) {
  return new MockLanguageModelV3({
    doGenerate: [
      {
        content: calls.map((c) => ({
          type: 'tool-call' as const,
          toolCallId: c.id,
          toolName: c.tool,
          input: JSON.stringify(c.input),
        })),
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
        usage,
        warnings: [],
      },
      {
        content: [{ type: 'text', text: 'done' }],
        finishReason: { unified: 'stop', raw: 'stop' },
        usage,
        warnings: [],
      },
    ],
  });
}

/** The tool results (or errors) the model was given in its second call, by tool call id. */
function toolOutputsSeen(model: MockLanguageModelV3): Record<string, unknown> {
  const prompt = model.doGenerateCalls[1]?.prompt ?? [];
  const out: Record<string, unknown> = {};
  for (const message of prompt as ModelMessage[]) {
    if (message.role !== 'tool') continue;
    for (const part of message.content) if (part.type === 'tool-result') out[part.toolCallId] = part.output;
  }
  return out;
}

it('package.json exports ./adapters/vercel-ai, the built module with guardedTool', async () => {
  ensureProxyBuilt();
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    exports: Record<string, string>;
  };
  expect(pkg.exports['./adapters/vercel-ai']).toBe('./dist/clients/adapters/vercel-ai.js');
  const built = (await import(new URL(`../../${pkg.exports['./adapters/vercel-ai']}`, import.meta.url).href)) as Record<
    string,
    unknown
  >;
  expect(typeof built.guardedTool).toBe('function');
}, 180_000);

describe.each(STORE_KINDS)('Vercel AI SDK adapter (%s store)', (kind) => {
  let svc: AdapterService;
  beforeAll(async () => {
    svc = await startAdapterService(kind);
  });
  afterAll(async () => {
    await svc?.rt.close();
  });

  function tools(agentId: string, ran: string[]) {
    const refund = guardedTool(
      {
        authz: svc.authz,
        agent_id: agentId,
        action: 'payments.refund',
        resource: (i: { order_id: string; amount: number }) => `order:${i.order_id}`,
        amount: (i) => i.amount,
      },
      {
        description: 'Refund an order',
        inputSchema: z.object({ order_id: z.string(), amount: z.number() }),
        execute: async ({ order_id, amount }, { decision, toolCallId }) => {
          ran.push(`refund ${order_id} ${amount} ${toolCallId}`);
          return { refunded: amount, decision: decision.id, permit: decision.permit_token };
        },
      },
    );
    const deleteCustomer = guardedTool(
      {
        authz: svc.authz,
        agent_id: agentId,
        action: 'customers.delete',
        resource: (i: { customer_id: string }) => `customer:${i.customer_id}`,
      },
      {
        description: 'Delete a customer',
        inputSchema: z.object({ customer_id: z.string() }),
        execute: async ({ customer_id }) => {
          ran.push(`delete ${customer_id}`);
          return 'deleted';
        },
      },
    );
    const lookup = guardedTool(
      {
        authz: svc.authz,
        agent_id: agentId,
        action: 'orders.read',
        resource: (i: { order_id: string }) => `order:${i.order_id}`,
      },
      {
        description: 'Look up an order',
        inputSchema: z.object({ order_id: z.string() }),
        execute: async ({ order_id }): Promise<string> => {
          ran.push(`lookup ${order_id}`);
          throw new Error(`order ${order_id} is archived`);
        },
      },
    );
    return { refund, delete_customer: deleteCustomer, lookup };
  }

  /** A run's file reader (its results carry `private`, or what `labels` says) and mailer. */
  function runTools(agentId: string, session: string, labels: readonly string[] = ['private']) {
    const authz = svc.inSession(session);
    const readFile = guardedTool(
      { authz, agent_id: agentId, action: 'files.read', resource: (i: { path: string }) => `file:${i.path}`, labels },
      {
        description: 'Read a file',
        inputSchema: z.object({ path: z.string() }),
        execute: async ({ path }) => `contents of ${path}`,
      },
    );
    const sendEmail = guardedTool(
      { authz, agent_id: agentId, action: 'email.send', resource: (i: { to: string }) => `mailto:${i.to}` },
      {
        description: 'Send an e-mail',
        inputSchema: z.object({ to: z.string(), body: z.string() }),
        execute: async ({ to }) => `sent to ${to}`,
      },
    );
    return { authz, tools: { read_file: readFile, send_email: sendEmail } };
  }

  it('a tool that declares labels adds them to the session before its result is returned; the next decision sees them', async () => {
    const agentId = supportAgent('vercel-labels');
    const session = `run-${agentId}`;
    const { authz, tools: t } = runTools(agentId, session);
    const first = scriptedModel([{ id: 'call-read-1', tool: 'read_file', input: { path: 'hr/salaries.csv' } }]);
    await generateText({ model: first, tools: t, stopWhen: stepCountIs(3), prompt: 'Read the salaries' });
    expect(toolOutputsSeen(first)['call-read-1']).toMatchObject({ type: 'text', value: 'contents of hr/salaries.csv' });
    const [read] = await svc.decisionsOf(agentId);
    const labels = (await authz.getSession()).labels;
    expect(labels).toEqual([
      {
        label: 'private',
        added_at: expect.any(String),
        source: 'api',
        detail: `result of files.read (decision ${read!.id})`,
      },
    ]);
    const second = scriptedModel([
      { id: 'call-mail-1', tool: 'send_email', input: { to: 'x@out.example', body: 'salaries' } },
    ]);
    const result = await generateText({ model: second, tools: t, stopWhen: stepCountIs(3), prompt: 'Mail them out' });
    const error = result.steps[0]!.content.find((p) => p.type === 'tool-error');
    expect((error as { error: DecisionDeniedError }).error).toBeInstanceOf(DecisionDeniedError);
    const [mail] = await svc.decisionsOf(agentId);
    expect(mail).toMatchObject({
      action: 'email.send',
      effect: 'deny',
      policy_id: 'pol_mail_after_private',
      metadata: { session_labels: ['private'] },
    });
  });

  it('labels that cannot be added withhold the result: the call fails and its decision is rejected', async () => {
    const agentId = supportAgent('vercel-labels-bad');
    const { tools: t } = runTools(agentId, `run-${agentId}`, ['Not A Label']);
    const model = scriptedModel([{ id: 'call-read-2', tool: 'read_file', input: { path: 'a.txt' } }]);
    const result = await generateText({ model, tools: t, stopWhen: stepCountIs(3), prompt: 'Read a.txt' });
    const error = result.steps[0]!.content.find((p) => p.type === 'tool-error');
    expect((error as { error: Error }).error.message).toContain('Not A Label');
    expect(JSON.stringify(toolOutputsSeen(model)['call-read-2'])).not.toContain('contents of a.txt');
    const [d] = await svc.decisionsOf(agentId);
    expect(d).toMatchObject({ action: 'files.read', status: 'rejected' });
  });

  it('runs an allowed call under its decision (permit bound to the arguments) and confirms it with the amount', async () => {
    const agentId = supportAgent('vercel-ok');
    const ran: string[] = [];
    const model = scriptedModel([{ id: 'call-ok-1', tool: 'refund', input: { order_id: '1001', amount: 20 } }]);
    const result = await generateText({
      model,
      tools: tools(agentId, ran),
      stopWhen: stepCountIs(3),
      prompt: 'Refund order 1001, 20 USD',
    });
    expect(result.text).toBe('done');
    expect(ran).toEqual(['refund 1001 20 call-ok-1']);
    const [d] = await svc.decisionsOf(agentId);
    expect(d).toMatchObject({
      effect: 'allow',
      action: 'payments.refund',
      resource: 'order:1001',
      amount: 20,
      status: 'confirmed',
      confirmed_amount: 20,
      args_digest: argsDigest({ order_id: '1001', amount: 20 }),
      context: { tool: { call_id: 'call-ok-1', arguments: { order_id: '1001', amount: 20 } } },
    });
    expect(toolOutputsSeen(model)['call-ok-1']).toMatchObject({
      type: 'json',
      value: { refunded: 20, decision: d!.id },
    });
    expect(await svc.refundBudget(agentId)).toMatchObject({ consumed: 20, held: 0 });
  });

  it('a deny never runs the work: the model gets a tool error naming the reason and the decision', async () => {
    const agentId = supportAgent('vercel-deny');
    const ran: string[] = [];
    const model = scriptedModel([{ id: 'call-del-1', tool: 'delete_customer', input: { customer_id: 'cus_9' } }]);
    const result = await generateText({
      model,
      tools: tools(agentId, ran),
      stopWhen: stepCountIs(3),
      prompt: 'Delete customer cus_9',
    });
    expect(ran).toEqual([]);
    const [d] = await svc.decisionsOf(agentId);
    expect(d).toMatchObject({ effect: 'deny', reason: 'policy.matched', policy_id: 'pol_delete', status: 'denied' });
    const error = result.steps[0]!.content.find((p) => p.type === 'tool-error');
    expect(error?.type === 'tool-error' && error.error).toBeInstanceOf(DecisionDeniedError);
    expect(((error as { error: DecisionDeniedError }).error.decision as Decision).id).toBe(d!.id);
    expect(JSON.stringify(toolOutputsSeen(model)['call-del-1'])).toContain(
      `customers.delete denied for ${agentId}: policy.matched (${d!.id})`,
    );
  });

  it('work that throws rejects the decision, and the SDK reports the work error', async () => {
    const agentId = supportAgent('vercel-throw');
    const ran: string[] = [];
    const model = scriptedModel([{ id: 'call-look-1', tool: 'lookup', input: { order_id: '77' } }]);
    const result = await generateText({
      model,
      tools: tools(agentId, ran),
      stopWhen: stepCountIs(3),
      prompt: 'Look up order 77',
    });
    expect(ran).toEqual(['lookup 77']);
    expect((await svc.decisionsOf(agentId))[0]).toMatchObject({ effect: 'allow', status: 'rejected' });
    const error = result.steps[0]!.content.find((p) => p.type === 'tool-error');
    expect((error as { error: Error }).error.message).toBe('order 77 is archived');
  });

  it('execute can be called directly, as the SDK does, with its execution options', async () => {
    const agentId = supportAgent('vercel-direct');
    const ran: string[] = [];
    const { refund } = tools(agentId, ran);
    const out = await refund.execute!({ order_id: '5', amount: 70 }, { toolCallId: 'direct-1', messages: [] });
    expect(out).toMatchObject({ refunded: 70 });
    // Over 50: a review decision, which runs (flagged for a human) and is confirmed.
    expect((await svc.decisionsOf(agentId))[0]).toMatchObject({
      effect: 'review',
      status: 'confirmed',
      policy_id: 'pol_refund_large',
    });
  });
});
