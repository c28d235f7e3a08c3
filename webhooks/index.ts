/**
 * agent-authz/webhooks: for services that receive the authorization service's
 * webhooks. Verify `X-Service-Signature` over the raw request body with
 * `verifyWebhookSignature(rawBody, header, secret)` (constant time; 401 when it
 * is false), then de-duplicate on the envelope `id`. `signWebhookBody` makes the
 * same signature (tests, local tooling). See examples/webhook-receiver.
 */
export { verifyWebhookSignature, signWebhookBody } from '../runtime/webhooks/signature.js';
