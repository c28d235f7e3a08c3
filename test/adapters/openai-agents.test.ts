/**
 * agent-authz/adapters/openai-agents with the OpenAI Agents SDK itself
 * (`@openai/agents`): guarded tools inside the SDK's real run loop (`run`,
 * interruptions, `state.approve` / `state.reject`, resuming), against a real
 * service on loopback. The package ships no test model in this version, so
 * the model is a scripted implementation of its `Model` interface: no HTTP to
 * any LLM, and tracing is off.
 */
import {
  Agent,
  run,
  setTracingDisabled,
  Usage,
  type Model,
  type ModelRequest,
  type ModelResponse,
} from '@openai/agents';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAgentsToolGuard } from '../../clients/adapters/openai-agents.js';
import type { Decision } from '../../clients/typescript/index.js';
import { argsDigest } from '../../permit-verifier/index.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { ensureProxyBuilt } from '../mcp/helpers/proxy.js';
import { startAdapterService, supportAgent, type AdapterService } from './helpers/service.js';

setTracingDisabled(true);

/** A model that answers the scripted outputs in order and keeps every request it got. */
class ScriptedModel implements Model {
  readonly requests: ModelRequest[] = [];
  constructor(private readonly steps: Array<ModelResponse['output']>) {}
  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(request);
    const output = this.steps.shift();
    if (!output) throw new Error('the scripted model has no more steps');
    return { usage: new Usage(), output, responseId: `resp_${this.requests.length}` };
  }
  // eslint-disable-next-line require-yield
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('not streamed in these tests');
  }
}

const call = (name: string, callId: string, args: unknown) => ({
  type: 'function_call' as const,
  name,
  callId,
  arguments: JSON.stringify(args),
  status: 'completed' as const,
});
const say = (text: string) => ({
  type: 'message' as const,
  role: 'assistant' as const,
  status: 'completed' as const,
  content: [{ type: 'output_text' as const, text }],
});

/** The text the model was given as the output of a call, in a later request. */
function outputSeen(model: ScriptedModel, callId: string): string | undefined {
  for (const request of model.requests) {
    if (typeof request.input === 'string') continue;
    for (const item of request.input) {
      const i = item as { type?: string; callId?: string; output?: unknown };
      if (i.type === 'function_call_result' && i.callId === callId) {
        const o = i.output as { type?: string; text?: string } | string;
        return typeof o === 'string' ? o : (o.text ?? JSON.stringify(o));
      }
    }
  }
  return undefined;
}

it('package.json exports ./adapters/openai-agents, the built module with createAgentsToolGuard', async () => {
  ensureProxyBuilt();
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    exports: Record<string, string>;
  };
  expect(pkg.exports['./adapters/openai-agents']).toBe('./dist/clients/adapters/openai-agents.js');
  const built = (await import(
    new URL(`../../${pkg.exports['./adapters/openai-agents']}`, import.meta.url).href
  )) as Record<string, unknown>;
  expect(typeof built.createAgentsToolGuard).toBe('function');
}, 180_000);

describe.each(STORE_KINDS)('OpenAI Agents SDK adapter (%s store)', (kind) => {
  let svc: AdapterService;
  let callSeq = 0;
  const callId = () => `call_${kind}_${++callSeq}_${Math.random().toString(36).slice(2, 8)}`;

  beforeAll(async () => {
    svc = await startAdapterService(kind);
  });
  afterAll(async () => {
    await svc?.rt.close();
  });

  function setup(tag: string, interruptOn?: 'review' | 'approval') {
    const agentId = supportAgent(tag);
    const ran: string[] = [];
    const seen: Decision[] = [];
    const guard = createAgentsToolGuard({
      authz: svc.authz,
      agent_id: agentId,
      ...(interruptOn ? { interruptOn } : {}),
    });
    const refund = guard.tool({
      name: 'refund_order',
      description: 'Refund an order',
      parameters: z.object({ order_id: z.string(), amount: z.number() }),
      authorization: { action: 'payments.refund', resource: (i) => `order:${i.order_id}`, amount: (i) => i.amount },
      execute: async ({ order_id, amount }, { decision }) => {
        ran.push(`refund ${order_id} ${amount}`);
        seen.push(decision);
        return `refunded ${amount} USD on order ${order_id}`;
      },
    });
    const deleteCustomer = guard.tool({
      name: 'delete_customer',
      description: 'Delete a customer',
      parameters: z.object({ customer_id: z.string() }),
      authorization: { action: 'customers.delete', resource: (i) => `customer:${i.customer_id}` },
      execute: async ({ customer_id }) => {
        ran.push(`delete ${customer_id}`);
        return 'deleted';
      },
    });
    return { agentId, ran, seen, guard, tools: [refund, deleteCustomer] };
  }

  it('a tool that declares labels adds them to the session before its result is returned; the next decision sees them', async () => {
    const agentId = supportAgent('oa-labels');
    const session = `run-${agentId}`;
    const authz = svc.inSession(session);
    const guard = createAgentsToolGuard({ authz, agent_id: agentId });
    const readFile = guard.tool({
      name: 'read_file',
      description: 'Read a file',
      parameters: z.object({ path: z.string() }),
      authorization: {
        action: 'files.read',
        resource: (i) => `file:${i.path}`,
        labels: (_i, result) => (String(result).includes('salary') ? ['private', 'pii'] : ['private']),
      },
      execute: async ({ path }) => `salary table from ${path}`,
    });
    const sendEmail = guard.tool({
      name: 'send_email',
      description: 'Send an e-mail',
      parameters: z.object({ to: z.string() }),
      authorization: { action: 'email.send', resource: (i) => `mailto:${i.to}` },
      execute: async ({ to }) => `sent to ${to}`,
    });
    const readId = callId();
    const mailId = callId();
    const model = new ScriptedModel([
      [call('read_file', readId, { path: 'hr/salaries.csv' })],
      [call('send_email', mailId, { to: 'x@out.example' })],
      [say('stopped')],
    ]);
    const result = await run(
      new Agent({ name: 'assistant', model, tools: [readFile, sendEmail] }),
      'Mail the salaries out',
    );
    expect(result.finalOutput).toBe('stopped');
    expect(outputSeen(model, readId)).toBe('salary table from hr/salaries.csv');
    const [mail, read] = await svc.decisionsOf(agentId);
    expect(read).toMatchObject({ action: 'files.read', status: 'confirmed' });
    expect((await authz.getSession()).labels.map((l) => [l.label, l.source])).toEqual([
      ['pii', 'api'],
      ['private', 'api'],
    ]);
    expect(mail).toMatchObject({
      action: 'email.send',
      effect: 'deny',
      policy_id: 'pol_mail_after_private',
      metadata: { session_labels: ['pii', 'private'] },
    });
    expect(outputSeen(model, mailId)).toBe(
      `Denied by agent-authz: policy.matched (decision ${mail!.id}). The tool was not called.`,
    );
  });

  it('an allowed call runs with its decision and permit, and is confirmed with the amount', async () => {
    const s = setup('oa-ok');
    const id = callId();
    const model = new ScriptedModel([[call('refund_order', id, { order_id: '1001', amount: 20 })], [say('refunded')]]);
    const result = await run(new Agent({ name: 'support', model, tools: s.tools }), 'Refund order 1001, 20 USD');
    expect(result.finalOutput).toBe('refunded');
    expect(result.interruptions).toEqual([]);
    expect(s.ran).toEqual(['refund 1001 20']);
    expect(s.seen[0]!.permit_token).toMatch(/^eyJ/);
    const decisions = await svc.decisionsOf(s.agentId);
    expect(decisions).toHaveLength(1);
    expect(decisions[0]).toMatchObject({
      id: s.seen[0]!.id,
      effect: 'allow',
      status: 'confirmed',
      confirmed_amount: 20,
      args_digest: argsDigest({ order_id: '1001', amount: 20 }),
      context: { tool: { call_id: id } },
    });
    expect(outputSeen(model, id)).toBe('refunded 20 USD on order 1001');
  });

  it('a deny never runs the work: the model gets the reason and the decision id', async () => {
    const s = setup('oa-deny');
    const id = callId();
    const model = new ScriptedModel([[call('delete_customer', id, { customer_id: 'cus_9' })], [say('could not')]]);
    const result = await run(new Agent({ name: 'support', model, tools: s.tools }), 'Delete customer cus_9');
    expect(result.finalOutput).toBe('could not');
    expect(s.ran).toEqual([]);
    const decisions = await svc.decisionsOf(s.agentId);
    expect(decisions).toHaveLength(1);
    expect(outputSeen(model, id)).toBe(
      `Denied by agent-authz: policy.matched (decision ${decisions[0]!.id}). The tool was not called.`,
    );
  });

  it("interruptOn 'review': a review decision stops the run (needsApproval); approved, the same decision runs and is confirmed", async () => {
    const s = setup('oa-review', 'review');
    const id = callId();
    const model = new ScriptedModel([
      [call('refund_order', id, { order_id: '2002', amount: 80 })],
      [say('refunded after review')],
    ]);
    const agent = new Agent({ name: 'support', model, tools: s.tools });
    let result = await run(agent, 'Refund order 2002, 80 USD');
    expect(result.interruptions).toHaveLength(1);
    const item = result.interruptions[0]!;
    expect(s.ran).toEqual([]);
    const pending = s.guard.decisionFor(item);
    expect(pending).toMatchObject({ effect: 'review', status: 'pending', policy_id: 'pol_refund_large', amount: 80 });

    result.state.approve(item);
    result = await run(agent, result.state);
    expect(result.finalOutput).toBe('refunded after review');
    expect(s.ran).toEqual(['refund 2002 80']);
    expect(s.seen[0]!.id).toBe(pending!.id);
    // One decision for the call, through the interruption and the resumed run.
    const decisions = await svc.decisionsOf(s.agentId);
    expect(decisions.map((d) => [d.id, d.status])).toEqual([[pending!.id, 'confirmed']]);
  });

  it("interruptOn 'review': rejected by the human, the work never runs and release() rejects the decision", async () => {
    const s = setup('oa-refuse', 'review');
    const id = callId();
    const model = new ScriptedModel([
      [call('refund_order', id, { order_id: '3003', amount: 90 })],
      [say('not refunded')],
    ]);
    const agent = new Agent({ name: 'support', model, tools: s.tools });
    let result = await run(agent, 'Refund order 3003, 90 USD');
    const item = result.interruptions[0]!;
    const pending = s.guard.decisionFor(item)!;
    result.state.reject(item);
    await s.guard.release(item);
    result = await run(agent, result.state);
    expect(result.finalOutput).toBe('not refunded');
    expect(s.ran).toEqual([]);
    expect(s.guard.decisionFor(item)).toBeUndefined();
    expect((await svc.decisionsOf(s.agentId)).map((d) => [d.id, d.status])).toEqual([[pending.id, 'rejected']]);
  });

  it('by default only decisions awaiting approval interrupt: a plain review decision runs (flagged for a human)', async () => {
    const s = setup('oa-default');
    const id = callId();
    const model = new ScriptedModel([[call('refund_order', id, { order_id: '4004', amount: 60 })], [say('ok')]]);
    const result = await run(new Agent({ name: 'support', model, tools: s.tools }), 'Refund order 4004, 60 USD');
    expect(result.interruptions).toEqual([]);
    expect(s.ran).toEqual(['refund 4004 60']);
    expect((await svc.decisionsOf(s.agentId))[0]).toMatchObject({ effect: 'review', status: 'confirmed' });
  });

  it('work that throws rejects the decision and releases its budget hold', async () => {
    const agentId = supportAgent('oa-throw');
    const guard = createAgentsToolGuard({ authz: svc.authz, agent_id: agentId });
    const failing = guard.tool({
      name: 'refund_order',
      description: 'Refund an order',
      parameters: z.object({ order_id: z.string(), amount: z.number() }),
      authorization: { action: 'payments.refund', resource: (i) => `order:${i.order_id}`, amount: (i) => i.amount },
      execute: async () => {
        throw new Error('the payment provider is down');
      },
    });
    const id = callId();
    const model = new ScriptedModel([[call('refund_order', id, { order_id: '5005', amount: 30 })], [say('failed')]]);
    const result = await run(new Agent({ name: 'support', model, tools: [failing] }), 'Refund order 5005, 30 USD');
    expect(result.finalOutput).toBe('failed');
    expect((await svc.decisionsOf(agentId))[0]).toMatchObject({ effect: 'allow', status: 'rejected' });
    expect(await svc.refundBudget(agentId)).toMatchObject({ held: 0, consumed: 0 });
  });
});
