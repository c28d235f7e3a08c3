/**
 * agent-authz/webhooks: for services that receive the authorization service's
 * webhooks. Verify `X-Service-Signature` over the raw request body with
 * `verifyWebhookSignature(rawBody, header, secret)` (constant time; 401 when it
 * is false), then de-duplicate on the envelope `id`. `signWebhookBody` makes the
 * same signature (tests, local tooling). An endpoint registered with
 * `"standard_webhooks": true` also sends the Standard Webhooks headers:
 * `verifyStandardWebhook(rawBody, headers, secret)` checks them and refuses a
 * delivery more than 5 minutes old (a replay). See examples/webhook-receiver.
 *
 * The functions are the service's own (runtime/webhooks/signature.ts and
 * standard-webhooks.ts, what its dispatcher signs with), published here under
 * their documented names.
 */
import { signWebhookBody as sign, verifyWebhookSignature as verify } from '../runtime/webhooks/signature.js';
import {
  DEFAULT_TOLERANCE_SECONDS as TOLERANCE,
  signStandardWebhook as signStandard,
  verifyStandardWebhook as verifyStandard,
} from '../runtime/webhooks/standard-webhooks.js';

export type { HeaderSource, StandardWebhookOptions } from '../runtime/webhooks/standard-webhooks.js';

/**
 * Whether `header` (the `X-Service-Signature` value as Node gives it) is the
 * signature of `rawBody` under `secret`: `sha256=` and the hex HMAC-SHA256 of the
 * exact bytes received (never a re-serialised parse), keyed with the endpoint's
 * whole `whsec_...` secret. Compared in constant time. A missing, empty,
 * malformed, repeated, other-scheme or wrong-length header is false, never an
 * exception.
 *
 * @param rawBody - the request body exactly as received (string as UTF-8, or bytes).
 * @param header - the `X-Service-Signature` header (`req.headers['x-service-signature']`).
 * @param secret - the endpoint's signing secret, `whsec_...`.
 * @returns true when the signature is right; answer 401 when it is false.
 * @throws TypeError for a programming error: an empty or non-string secret, or a
 *   body that is neither a string nor bytes (a parsed object).
 *
 * @example
 * ```ts
 * import { signWebhookBody, verifyWebhookSignature } from 'agent-authz/webhooks';
 *
 * const secret = 'whsec_0123456789abcdef';
 * const rawBody = '{"id":"evt_1","type":"decision.created"}';
 * const header = signWebhookBody(rawBody, secret); // what the service sends
 * console.log(verifyWebhookSignature(rawBody, header, secret)); // => true
 * console.log(verifyWebhookSignature(rawBody.replace('evt_1', 'evt_2'), header, secret)); // => false
 * console.log(verifyWebhookSignature(rawBody, undefined, secret)); // => false
 * ```
 */
export const verifyWebhookSignature: typeof verify = verify;

/**
 * The `X-Service-Signature` value for `body`: `sha256=` and the lower-case hex
 * HMAC-SHA256 of the body (a string is hashed as UTF-8) keyed with `secret`, as
 * the service signs its deliveries. For tests and local tooling.
 *
 * @param body - the exact body to be sent.
 * @param secret - the endpoint's signing secret, `whsec_...`.
 * @returns `sha256=<64 hex digits>`.
 * @throws TypeError when the secret is empty or not a string.
 *
 * @example
 * ```ts
 * import { signWebhookBody } from 'agent-authz/webhooks';
 *
 * console.log(signWebhookBody('{}', 'whsec_test')); // => sha256=46bdc2a2e83964bd2695acc6a1f97162d8bafc135a071aa5cd5c99aae5481440
 * ```
 */
export const signWebhookBody: typeof sign = sign;

/** How far (seconds) a Standard Webhooks timestamp may be from now by default: 300. */
export const DEFAULT_TOLERANCE_SECONDS: number = TOLERANCE;

/**
 * Whether a delivery's Standard Webhooks headers (endpoints registered with
 * `"standard_webhooks": true`) are right: `webhook-id`, a `webhook-timestamp`
 * at most `toleranceSeconds` (default 300) from now either way, so a delivery
 * captured and sent again later is refused, and a `v1,` value in
 * `webhook-signature` that is the base64 HMAC-SHA256 of
 * `"<id>.<timestamp>.<raw body>"` keyed with the base64-decoded part of the
 * secret after `whsec_`. Compared in constant time; anything missing or
 * malformed is false, never an exception. The same check as the
 * `standardwebhooks` package's `Webhook.verify`.
 *
 * @param rawBody - the request body exactly as received (string as UTF-8, or bytes).
 * @param headers - the request's headers (`req.headers`, or a fetch `Headers`).
 * @param secret - the endpoint's signing secret, `whsec_...`.
 * @param options - `toleranceSeconds` (default 300), `now` (ms, default `Date.now()`).
 * @returns true when the delivery is authentic and recent; answer 401 when it is false.
 * @throws TypeError for a programming error: a secret that is not `whsec_` +
 *   base64, or a body that is neither a string nor bytes.
 *
 * @example
 * ```ts
 * import { signStandardWebhook, verifyStandardWebhook } from 'agent-authz/webhooks';
 *
 * const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
 * const rawBody = '{"id":"evt_1"}';
 * const timestamp = Math.floor(Date.now() / 1000);
 * const headers = { 'webhook-id': 'evt_1', 'webhook-timestamp': String(timestamp), 'webhook-signature': signStandardWebhook('evt_1', timestamp, rawBody, secret) };
 * console.log(verifyStandardWebhook(rawBody, headers, secret)); // => true
 * // 10 minutes later the same delivery is refused as a replay:
 * console.log(verifyStandardWebhook(rawBody, headers, secret, { now: Date.now() + 600_000 })); // => false
 * ```
 */
export const verifyStandardWebhook: typeof verifyStandard = verifyStandard;

/**
 * The `webhook-signature` value the service sends: `v1,<base64 HMAC-SHA256 of
 * "<id>.<timestamp>.<body>">` keyed with the base64-decoded part of the secret
 * after `whsec_`. For tests and local tooling.
 *
 * @example
 * ```ts
 * import { signStandardWebhook } from 'agent-authz/webhooks';
 *
 * console.log(signStandardWebhook('evt_1', 1795600000, '{}', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')); // => v1,u7FnG3BrOdQF4dBHKGoZunA+zapFn5MNiIkBHHu4lxk=
 * ```
 */
export const signStandardWebhook: typeof signStandard = signStandard;
