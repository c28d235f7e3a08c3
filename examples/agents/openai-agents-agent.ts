/**
 * An OpenAI Agents SDK (`@openai/agents`) agent whose tools are decided by
 * agent-authz (agent-authz/adapters/openai-agents, docs/adapters.md), with
 * review decisions turned into the SDK's approval interruptions, against the
 * example policies the service loads on its first start (examples/support: a
 * refund over USD 50 is a review).
 *
 *   node dist/examples/agents/openai-agents-agent.js     (AUTHZ_URL, AUTHZ_API_KEY)
 *
 * So that it runs without an OpenAI account, a scripted model plays the LLM
 * (and tracing is off). With a real model, leave `model` out of the Agent
 * (the SDK then uses OpenAI with OPENAI_API_KEY).
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
import { z } from 'zod';
import { createAgentsToolGuard } from '../../clients/adapters/openai-agents.js';
import { AuthzClient } from '../../clients/typescript/index.js';

setTracingDisabled(true);

const authz = new AuthzClient({
  baseUrl: process.env.AUTHZ_URL ?? 'http://127.0.0.1:8080',
  apiKey: process.env.AUTHZ_API_KEY ?? '',
});
const guard = createAgentsToolGuard({ authz, agent_id: 'support-bot-9', interruptOn: 'review' });

const refund = guard.tool({
  name: 'refund_order',
  description: 'Refund an order, in USD',
  parameters: z.object({ order_id: z.string(), amount: z.number() }),
  authorization: { action: 'payments.refund', resource: (i) => `order:${i.order_id}`, amount: (i) => i.amount },
  execute: async ({ order_id, amount }, { decision }) =>
    `refunded ${amount} USD on order ${order_id} (decision ${decision.effect})`,
});

/** Plays the LLM: asks for one refund, then reports what the tool said. */
class ScriptedModel implements Model {
  #step = 0;
  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    const output: ModelResponse['output'] =
      this.#step++ === 0
        ? [
            {
              type: 'function_call',
              callId: `call-${Date.now()}`,
              name: 'refund_order',
              arguments: JSON.stringify({ order_id: '1001', amount: 80 }),
              status: 'completed',
            },
          ]
        : [
            {
              type: 'message',
              role: 'assistant',
              status: 'completed',
              content: [{ type: 'output_text', text: `Done: ${lastToolOutput(request)}` }],
            },
          ];
    return { usage: new Usage(), output };
  }
  // eslint-disable-next-line require-yield
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('not streamed');
  }
}

function lastToolOutput(request: ModelRequest): string {
  const items = typeof request.input === 'string' ? [] : request.input;
  const result = [...items].reverse().find((i) => (i as { type?: string }).type === 'function_call_result') as
    { output?: { text?: string } | string } | undefined;
  return typeof result?.output === 'string' ? result.output : (result?.output?.text ?? '(nothing)');
}

const agent = new Agent({
  name: 'support',
  instructions: 'You help customers.',
  model: new ScriptedModel(),
  tools: [refund],
});
let result = await run(agent, 'Refund order 1001, 80 USD.');
while (result.interruptions.length > 0) {
  for (const item of result.interruptions) {
    const decision = guard.decisionFor(item);
    console.log(
      `approval needed: ${item.name} ${item.arguments} (agent-authz: ${decision?.effect}, policy ${decision?.policy_id}, decision ${decision?.id})`,
    );
    // A supervisor's screen would ask here; this one approves.
    console.log('supervisor: approved');
    result.state.approve(item);
  }
  result = await run(agent, result.state);
}
console.log(`agent: ${result.finalOutput}`);
