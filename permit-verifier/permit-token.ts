/**
 * The frame of a permit token, read once for both verifiers (POST /v1/permits/verify
 * in runtime/permits/verify.ts, and the verifier library in create-verifier.ts):
 * a compact JWS of three canonical base64url segments whose protected header says
 * `alg: EdDSA`, `typ: permit+jwt`, a `kid`, and no `crit`. Each verifier then
 * checks the signature its own way (node:crypto, jose) and hands the payload to
 * permit-claims.ts. Everything here is refused with PermitSignatureInvalidError
 * (`auth.signature_invalid`) before any key is looked up.
 */
import { PermitSignatureInvalidError } from './errors.js';

const B64URL_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** A permit token cut into its parts, its header checked. */
export interface PermitTokenParts {
  /** The protected header, decoded. */
  header: Record<string, unknown>;
  /** The header's key id: the JWK thumbprint of the key that signed the token. */
  kid: string;
  /** What the signature covers: `header '.' payload`, the two segments as sent. */
  signingInput: string;
  /** The payload segment (base64url). */
  payload: string;
  /** The signature segment (base64url). */
  signature: string;
}

/**
 * The refusal of a token that is not a valid permit, with the reason after the common prefix.
 *
 * @example
 * ```ts
 * invalidPermit('no token').message; // => 'the permit token is not valid: no token'
 * ```
 */
export function invalidPermit(why: string, cause?: unknown): PermitSignatureInvalidError {
  return new PermitSignatureInvalidError(
    `the permit token is not valid: ${why}`,
    cause === undefined ? undefined : { cause },
  );
}

/**
 * Attacker-supplied text in messages: JSON-quoted and cut to 80 characters.
 *
 * @example
 * ```ts
 * quote('order:1'); // => '"order:1"'
 * quote('x'.repeat(200)).length; // => 80
 * ```
 */
export function quote(value: unknown): string {
  const s = JSON.stringify(value) ?? String(value);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

/**
 * Whether a base64url segment is the one canonical spelling of its bytes: only
 * the URL-safe alphabet, no padding, and the unused low bits of the last
 * character zero. A lenient decoder ignores those bits, so without this check
 * 16 spellings of one signature would all verify.
 *
 * @example
 * ```ts
 * canonicalSegment('QQ'); // => true  (the byte 0x41)
 * canonicalSegment('QR'); // => false (the same byte, a low bit set)
 * canonicalSegment('QQ=='); // => false
 * ```
 */
export function canonicalSegment(part: string): boolean {
  if (!/^[A-Za-z0-9_-]*$/.test(part) || part.length % 4 === 1) return false;
  const last = B64URL_ALPHABET.indexOf(part[part.length - 1] ?? 'A');
  const unused = part.length % 4 === 2 ? 15 : part.length % 4 === 3 ? 3 : 0;
  return (last & unused) === 0;
}

/** A base64url segment's JSON, or undefined when it is not JSON. */
function decodeJson(segment: string): unknown {
  try {
    return JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
}

/** `typ` as RFC 7515 4.1.9 reads it: a media type, case-insensitive, whose `application/` may be left out. */
function isPermitTyp(typ: unknown): boolean {
  return typeof typ === 'string' && typ.toLowerCase().replace(/^application\//, '') === 'permit+jwt';
}

/**
 * Cuts a permit token into its parts and checks its header: three non-empty
 * canonical base64url segments, a JSON object header with `alg: "EdDSA"` (so
 * `none`, and `HS256` keyed with the public key, never reach a key), `typ:
 * "permit+jwt"` (`application/permit+jwt` too), a non-empty `kid`, and no
 * `crit` (this verifier understands no JWS extension, RFC 7515 4.1.11).
 *
 * @param token - the compact JWS, without `Bearer `; anything else is refused.
 * @throws PermitSignatureInvalidError naming what is wrong.
 *
 * @example
 * ```ts
 * const b64 = (v) => Buffer.from(JSON.stringify(v)).toString('base64url');
 * const token = `${b64({ alg: 'EdDSA', kid: 'k1', typ: 'permit+jwt' })}.${b64({ sub: 'bot' })}.${'A'.repeat(86)}`;
 * readPermitToken(token).kid; // => 'k1'
 * readPermitToken(`${b64({ alg: 'none', typ: 'permit+jwt' })}.${b64({})}.`); // throws PermitSignatureInvalidError
 * ```
 */
export function readPermitToken(token: unknown): PermitTokenParts {
  if (typeof token !== 'string' || token === '') throw invalidPermit('no token');
  const parts = token.split('.');
  if (parts.length !== 3 || !parts.every((part) => part !== '' && canonicalSegment(part)))
    throw invalidPermit('not a compact JWS of canonical base64url segments');
  const [h, payload, signature] = parts as [string, string, string];
  const header = decodeJson(h);
  if (header === null || typeof header !== 'object' || Array.isArray(header))
    throw invalidPermit('the header is not a JSON object');
  const { alg, typ, kid, crit } = header as Record<string, unknown>;
  if (alg !== 'EdDSA') throw invalidPermit(`the algorithm ${quote(alg)} is not accepted (EdDSA only)`);
  if (!isPermitTyp(typ)) throw invalidPermit('not a permit token (typ is not "permit+jwt")');
  if (typeof kid !== 'string' || kid === '') throw invalidPermit('no key id (kid) in the header');
  if (crit !== undefined)
    throw invalidPermit(`the header names extensions (crit ${quote(crit)}) this verifier does not understand`);
  return { header: header as Record<string, unknown>, kid, signingInput: `${h}.${payload}`, payload, signature };
}

/**
 * The payload of a token read by readPermitToken, parsed: call it only once the
 * signature verified. Its claims are checked by permit-claims.ts.
 *
 * @throws PermitSignatureInvalidError when the payload is not JSON.
 *
 * @example
 * ```ts
 * permitPayload({ payload: Buffer.from('{"sub":"bot"}').toString('base64url') }); // => { sub: 'bot' }
 * ```
 */
export function permitPayload(parts: Pick<PermitTokenParts, 'payload'>): unknown {
  const payload = decodeJson(parts.payload);
  if (payload === undefined) throw invalidPermit('the claims are not JSON');
  return payload;
}
