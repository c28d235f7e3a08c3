/**
 * A webhook receiver that turns review events into chat messages: the example
 * webhook receiver (signature checked over the raw body, duplicates dropped:
 * ../webhook-receiver/server.ts) with an `onEvent` that builds the message of
 * each `decision.review` and `decision.reviewed` (./message.ts) and hands it to
 * `post`. By default `post` prints the payload as one JSON line; give it a
 * function that POSTs to your chat's incoming webhook to send it for real.
 *
 * Run: `node dist/examples/review-receiver/server.js` (WEBHOOK_SECRET, the
 * endpoint's `whsec_...` secret, required; DASHBOARD_URL, default
 * http://127.0.0.1:8080/dashboard; PORT, default 4001; HOST, default 127.0.0.1).
 */
import type { FastifyInstance } from 'fastify';
import { buildReceiver } from '../webhook-receiver/server.js';
import { reviewMessage, type ChatMessage } from './message.js';
import { closeOnSignals, listenAddress, runAsMain } from '../shared/run-main.js';

export interface ReviewReceiverOptions {
  /** The endpoint's signing secret, `whsec_...`. */
  secret: string;
  /** Where the buttons lead, e.g. `https://authz.example.com/dashboard`. */
  dashboardUrl: string;
  /** Sends a message (default: prints it as one JSON line). A throw answers 500, so the service retries. */
  post?: (message: ChatMessage) => void | Promise<void>;
  logger?: boolean;
}

/**
 * The receiver, not listening yet.
 *
 * @example
 * const app = await buildReviewReceiver({ secret, dashboardUrl, post: (m) => slack.post(m) });
 * await app.listen({ port: 4001, host: '127.0.0.1' });
 */
export function buildReviewReceiver(options: ReviewReceiverOptions): Promise<FastifyInstance> {
  const post = options.post ?? ((message: ChatMessage) => void process.stdout.write(`${JSON.stringify(message)}\n`));
  return buildReceiver({
    secret: options.secret,
    logger: options.logger ?? false,
    onEvent: async (envelope) => {
      const message = reviewMessage(envelope, { dashboardUrl: options.dashboardUrl });
      if (message) await post(message);
    },
  });
}

async function main(): Promise<void> {
  const secret = process.env.WEBHOOK_SECRET ?? '';
  if (!secret.startsWith('whsec_'))
    throw new Error('WEBHOOK_SECRET must be the endpoint signing secret (whsec_...), shown once by POST /v1/webhooks');
  const app = await buildReviewReceiver({
    secret,
    dashboardUrl: process.env.DASHBOARD_URL || 'http://127.0.0.1:8080/dashboard',
  });
  closeOnSignals(app);
  await app.listen(listenAddress(4001));
}

runAsMain(import.meta.url, main);
