/**
 * The webhook signature (docs/webhooks-and-events.md#delivery): `X-Service-Signature: sha256=<hex>`, the
 * lower-case hex HMAC-SHA256 of the raw request body, keyed with the endpoint's
 * signing secret (the whole `whsec_...` string as UTF-8 bytes). The dispatcher
 * signs the exact bytes it sends; receivers verify over the exact bytes they
 * received (never a re-serialised parse), in constant time.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

const SCHEME = 'sha256=';
/** `sha256=` and 64 hex digits (either case); nothing else is a signature. */
const SIGNATURE = /^sha256=([0-9a-fA-F]{64})$/;
const DIGEST_BYTES = 32;

function hmac(body: string | Uint8Array, secret: string): Buffer {
  if (typeof secret !== 'string' || secret.length === 0) {
    // A configuration error (an unset WEBHOOK_SECRET, say), not a bad request:
    // an empty key would make every signature forgeable, so refuse loudly.
    throw new TypeError('the webhook signing secret must be a non-empty string');
  }
  return createHmac('sha256', secret).update(body).digest();
}

/** `sha256=<lower-case hex HMAC-SHA256 of body keyed with secret>`; a string body is hashed as UTF-8. */
export function signWebhookBody(body: string | Uint8Array, secret: string): string {
  return `${SCHEME}${hmac(body, secret).toString('hex')}`;
}

/**
 * True when `header` (the `X-Service-Signature` value as Node gives it) is the
 * signature of `rawBody` under `secret`. A missing, empty, malformed, repeated
 * (an array of more than one value), other-scheme or wrong-length header is
 * false, never an exception. The HMAC is computed and compared with
 * `timingSafeEqual` on equal-length buffers whatever the header holds, so the
 * time taken reveals nothing about how much of a guess was right.
 *
 * Throws a TypeError only for a programming error: an empty or non-string
 * secret, or a body that is neither a string nor bytes (a parsed object).
 */
export function verifyWebhookSignature(
  rawBody: string | Uint8Array,
  header: string | string[] | undefined | null,
  secret: string,
): boolean {
  const expected = hmac(rawBody, secret);
  const value = Array.isArray(header) ? (header.length === 1 ? header[0] : undefined) : header;
  const match = typeof value === 'string' ? SIGNATURE.exec(value.trim()) : null;
  // Compare against a buffer of the right length either way; the result counts only with a well-formed header.
  const given = match ? Buffer.from(match[1]!, 'hex') : Buffer.alloc(DIGEST_BYTES);
  const equal = timingSafeEqual(given, expected);
  return equal && match !== null;
}
