/**
 * A Vercel AI SDK (`ai` v6) agent whose tools are decided by agent-authz
 * (agent-authz/adapters/vercel-ai, docs/adapters.md), against the example
 * policies the service loads on its first start (examples/support).
 *
 *   node dist/examples/agents/vercel-ai-agent.js     (AUTHZ_URL, AUTHZ_API_KEY)
 *
 * So that it runs without an LLM account, the SDK's own mock model (`ai/test`)
 * plays the model: it asks for the two tool calls below, then answers. With a
 * real model (e.g. `openai('gpt-4o-mini')` from @ai-sdk/openai) nothing else changes.
 */
import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { z } from 'zod';
import { guardedTool } from '../../clients/adapters/vercel-ai.js';
import { AuthzClient } from '../../clients/typescript/index.js';

const authz = new AuthzClient({
  baseUrl: process.env.AUTHZ_URL ?? 'http://127.0.0.1:8080',
  apiKey: process.env.AUTHZ_API_KEY ?? '',
});
const agent_id = 'support-bot-8';

const tools = {
  lookup_order: guardedTool(
    { authz, agent_id, action: 'orders.read', resource: (i: { order_id: string }) => `order:${i.order_id}` },
    {
      description: "An order's status",
      inputSchema: z.object({ order_id: z.string() }),
      execute: async ({ order_id }, { decision }) =>
        `order ${order_id}: 2 items, shipped (decision ${decision.effect})`,
    },
  ),
  delete_customer: guardedTool(
    {
      authz,
      agent_id,
      action: 'customers.delete',
      resource: (i: { customer_id: string }) => `customer:${i.customer_id}`,
    },
    {
      description: 'Delete a customer record',
      inputSchema: z.object({ customer_id: z.string() }),
      execute: async ({ customer_id }) => `customer ${customer_id} deleted`,
    },
  ),
};

const usage = {
  inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 0, text: 0, reasoning: 0 },
};
const model = new MockLanguageModelV3({
  doGenerate: [
    {
      content: [
        {
          type: 'tool-call',
          toolCallId: 'call-1',
          toolName: 'lookup_order',
          input: JSON.stringify({ order_id: '1001' }),
        },
        {
          type: 'tool-call',
          toolCallId: 'call-2',
          toolName: 'delete_customer',
          input: JSON.stringify({ customer_id: 'cus_1' }),
        },
      ],
      finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
      usage,
      warnings: [],
    },
    {
      content: [{ type: 'text', text: 'Order 1001 has shipped; I may not delete customer records.' }],
      finishReason: { unified: 'stop', raw: 'stop' },
      usage,
      warnings: [],
    },
  ],
});

const result = await generateText({
  model,
  tools,
  stopWhen: stepCountIs(3),
  prompt: 'Where is order 1001? Then delete customer cus_1.',
});
for (const part of result.steps[0]!.content) {
  if (part.type === 'tool-result') console.log(`${part.toolName}: allowed: ${String(part.output)}`);
  if (part.type === 'tool-error') console.log(`${part.toolName}: refused: ${(part.error as Error).message}`);
}
console.log(`model: ${result.text}`);
