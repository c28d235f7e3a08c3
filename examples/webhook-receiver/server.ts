/**
 * A webhook receiver (docs/webhooks-and-events.md#delivery): the authorization service POSTs each event's
 * envelope to `POST /webhooks`, signed with the endpoint's `whsec_...` secret.
 *
 *   1. The body is kept as the raw bytes received; the signature
 *      (`X-Service-Signature: sha256=<hex>`) is checked over exactly those bytes,
 *      in constant time, before anything is parsed: 401 `{ error: 'invalid signature' }`.
 *      With `standardWebhooks` (an endpoint registered with
 *      `"standard_webhooks": true`) the Standard Webhooks headers must verify
 *      too, and a delivery whose `webhook-timestamp` is more than
 *      `toleranceSeconds` (300) from now is refused, so an old delivery sent
 *      again by someone who captured it is 401 `{ error: 'invalid signature' }`.
 *   2. Only then is it parsed: 400 when it is not JSON or not an event envelope.
 *   3. Delivery is at least once: an envelope id seen before (the last
 *      `rememberIds` ids, in memory) answers 200 `{ received: true, duplicate: true }`
 *      without handling the event again.
 *   4. Otherwise `onEvent(envelope)` runs and the answer is 200 `{ received: true }`.
 *      When it throws, 500 and the id is forgotten, so the service's retry
 *      handles the event again. Keep it short (answer within 2 s; 10 s is a
 *      failed attempt): queue slow work.
 *
 * Run: `node dist/examples/webhook-receiver/server.js` (WEBHOOK_SECRET, required:
 * the endpoint's `whsec_...` secret; STANDARD_WEBHOOKS=1 to require the Standard
 * Webhooks headers; PORT, default 4000; HOST, default 127.0.0.1).
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { verifyStandardWebhook, verifyWebhookSignature } from '../../webhook-receiver/index.js';
import { closeOnSignals, listenAddress, runAsMain } from '../shared/run-main.js';

/** The event envelope (docs/webhooks-and-events.md#events). */
export interface WebhookEnvelope {
  id: string;
  object: 'event';
  type: string;
  created_at: string;
  account_id: string;
  livemode: boolean;
  data: Record<string, unknown>;
}

export interface WebhookReceiverOptions {
  /** The endpoint's signing secret, `whsec_...`, shown once when it was registered. */
  secret: string;
  /** Handles one event, once per envelope id (as far as the receiver remembers). */
  onEvent?: (envelope: WebhookEnvelope) => void | Promise<void>;
  /**
   * Require the Standard Webhooks headers too (the endpoint was registered with
   * `"standard_webhooks": true`), refusing deliveries older than `toleranceSeconds`.
   */
  standardWebhooks?: boolean;
  /** How far (seconds) `webhook-timestamp` may be from now (default 300). */
  toleranceSeconds?: number;
  /** How many recent envelope ids are remembered for de-duplication (default 10,000). */
  rememberIds?: number;
  logger?: boolean;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The envelope in `value`, or null when it is not one (unknown extra fields are allowed). */
function asEnvelope(value: unknown): WebhookEnvelope | null {
  if (!isObject(value)) return null;
  const { id, object, type, created_at, account_id, livemode, data } = value;
  const ok =
    typeof id === 'string' &&
    id.startsWith('evt_') &&
    id.length > 4 &&
    object === 'event' &&
    typeof type === 'string' &&
    type.length > 0 &&
    typeof created_at === 'string' &&
    typeof account_id === 'string' &&
    typeof livemode === 'boolean' &&
    isObject(data);
  return ok ? (value as unknown as WebhookEnvelope) : null;
}

/** The last `max` ids seen, oldest forgotten first (a Set keeps insertion order). */
class RecentIds {
  private readonly ids = new Set<string>();
  constructor(private readonly max: number) {}
  has(id: string): boolean {
    return this.ids.has(id);
  }
  add(id: string): void {
    this.ids.add(id);
    while (this.ids.size > this.max) {
      const oldest = this.ids.values().next().value as string;
      this.ids.delete(oldest);
    }
  }
  delete(id: string): void {
    this.ids.delete(id);
  }
}

export async function buildReceiver(options: WebhookReceiverOptions): Promise<FastifyInstance> {
  if (typeof options.secret !== 'string' || options.secret.length === 0)
    throw new TypeError('buildReceiver needs the endpoint signing secret (whsec_...)');
  if (options.standardWebhooks) {
    // Fails now, not on the first delivery, for a secret that is not whsec_ + base64.
    verifyStandardWebhook('', {}, options.secret);
  }
  const rememberIds = options.rememberIds ?? 10_000;
  if (!Number.isInteger(rememberIds) || rememberIds < 1)
    throw new RangeError(`rememberIds must be a positive integer, not ${rememberIds}`);
  const seen = new RecentIds(rememberIds);
  const app = Fastify({ logger: options.logger ?? false });

  // The signature is over the exact bytes sent: keep them, parse nothing yet.
  // (Every other content type is 415.)
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => {
    done(null, body);
  });

  app.post('/webhooks', async (request, reply) => {
    const raw = request.body;
    if (!Buffer.isBuffer(raw) || !verifyWebhookSignature(raw, request.headers['x-service-signature'], options.secret)) {
      return reply.code(401).send({ error: 'invalid signature' });
    }
    // Also authentic and recent (a captured delivery sent again later is refused).
    const tolerance = options.toleranceSeconds === undefined ? {} : { toleranceSeconds: options.toleranceSeconds };
    if (options.standardWebhooks && !verifyStandardWebhook(raw, request.headers, options.secret, tolerance)) {
      return reply.code(401).send({ error: 'invalid signature' });
    }

    let parsed: unknown;
    try {
      parsed = JSON.parse(raw.toString('utf8'));
    } catch {
      return reply.code(400).send({ error: 'the body is not JSON' });
    }
    const event = asEnvelope(parsed);
    if (!event) return reply.code(400).send({ error: 'the body is not an event envelope' });

    const attempt = request.headers['x-service-delivery-attempt'];
    if (seen.has(event.id)) {
      request.log.info({ event_id: event.id, type: event.type, attempt }, 'duplicate webhook event');
      return reply.code(200).send({ received: true, duplicate: true });
    }
    // Claimed before handling, so a concurrent copy of the same event is a duplicate.
    seen.add(event.id);
    request.log.info({ event_id: event.id, type: event.type, attempt }, 'webhook event');
    try {
      await options.onEvent?.(event);
    } catch (error) {
      seen.delete(event.id); // not handled: let the service's retry try again
      request.log.error({ err: error, event_id: event.id }, 'webhook event handler failed');
      return reply.code(500).send({ error: 'the event could not be handled' });
    }
    return reply.code(200).send({ received: true });
  });

  return app;
}

async function main(): Promise<void> {
  const secret = process.env.WEBHOOK_SECRET ?? '';
  if (!secret.startsWith('whsec_'))
    throw new Error('WEBHOOK_SECRET must be the endpoint signing secret (whsec_...), shown once by POST /v1/webhooks');
  // Each event's type and id is logged by the route; a real receiver would act on it here.
  const app = await buildReceiver({ secret, standardWebhooks: process.env.STANDARD_WEBHOOKS === '1', logger: true });
  closeOnSignals(app);
  await app.listen(listenAddress(4000));
}

runAsMain(import.meta.url, main);
