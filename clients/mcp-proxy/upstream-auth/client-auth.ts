/**
 * How the proxy authenticates itself at the upstream's token endpoint
 * (docs/mcp.md#a-protected-upstream):
 *
 * - with a client secret: HTTP Basic (`client_secret_basic`, RFC 6749
 *   section 2.3.1), or the form body when the authorization server lists
 *   only `client_secret_post`;
 * - with a private key: a signed assertion (`private_key_jwt`, RFC 7523
 *   section 2.2): `client_assertion_type` =
 *   `urn:ietf:params:oauth:client-assertion-type:jwt-bearer` and a JWT signed
 *   with ES256 (a P-256 key) or RS256 (an RSA key of 2048 bits or more), `kid`
 *   the configured key id, `iss` = `sub` = the client id, `aud` = the
 *   authorization server's issuer identifier (RFC 7523bis; the token endpoint
 *   when only `token_url` names the server), a fresh `jti`, `iat` and an `exp`
 *   60 s later, per token request.
 */
import { createPrivateKey, randomUUID, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { SignJWT } from 'jose';
import type { TokenEndpoint } from './discovery.js';
import { UpstreamAuthError } from './errors.js';

/** RFC 7523's `client_assertion_type` for a JWT. */
export const JWT_BEARER_ASSERTION = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
/** Seconds a client assertion is valid for (its `exp` - `iat`). */
export const ASSERTION_LIFETIME_SECONDS = 60;

/** The private key of `private_key_jwt`: the key, its algorithm and its `kid`. */
export interface SigningKey {
  key: KeyObject;
  alg: 'ES256' | 'RS256';
  kid: string;
}

/** How the client authenticates: a secret, or a signing key. */
export type ClientAuthentication = { secret: string } | { signingKey: SigningKey };

/**
 * A PEM private key (PKCS #8, SEC 1 or PKCS #1) for `private_key_jwt`: P-256
 * signs ES256, RSA of 2048 bits or more RS256.
 *
 * @throws Error saying what is wrong with the file or the key.
 *
 * @example
 * ```ts
 * const key = loadSigningKey('/etc/authz/gateway.pem', 'gateway-2026-01');
 * console.log(key.alg, key.kid); // => ES256 gateway-2026-01
 * ```
 */
export function loadSigningKey(file: string, kid: string): SigningKey {
  let pem: string;
  try {
    pem = readFileSync(file, 'utf8');
  } catch (error) {
    throw new Error(`cannot read ${file}: ${(error as Error).message}`);
  }
  let key: KeyObject;
  try {
    key = createPrivateKey(pem);
  } catch (error) {
    throw new Error(`${file} holds no usable PEM private key (${(error as Error).message})`);
  }
  const details = key.asymmetricKeyDetails ?? {};
  if (key.asymmetricKeyType === 'ec' && details.namedCurve === 'prime256v1') return { key, alg: 'ES256', kid };
  if (key.asymmetricKeyType === 'rsa' && (details.modulusLength ?? 0) >= 2048) return { key, alg: 'RS256', kid };
  const bits = details.modulusLength ? ` of ${details.modulusLength} bits` : '';
  const what =
    key.asymmetricKeyType === 'ec'
      ? `an EC key on ${details.namedCurve}`
      : `an ${String(key.asymmetricKeyType).toUpperCase()} key${bits}`;
  throw new Error(
    `${file} holds ${what}: private_key_jwt signs with a P-256 key (ES256) or an RSA key of 2048 bits or more (RS256)`,
  );
}

/** `application/x-www-form-urlencoded` encoding of a client id or secret for HTTP Basic (RFC 6749 section 2.3.1). */
const formEncode = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');

/**
 * Puts the client's authentication into a token request (the form and its
 * headers), as the endpoint accepts it.
 *
 * @param nowMs - the time of the request (an assertion's `iat`).
 * @throws UpstreamAuthError when the authorization server lists methods or algorithms that exclude the configured one.
 *
 * @example
 * ```ts
 * const form = new URLSearchParams({ grant_type: 'client_credentials' });
 * const headers: Record<string, string> = {};
 * await authenticate({ secret: 's3cret' }, 'gw', { url: 'https://login.example.com/token' }, form, headers, Date.now());
 * console.log(headers.authorization); // => Basic Z3c6czNjcmV0
 * ```
 */
export async function authenticate(
  how: ClientAuthentication,
  clientId: string,
  endpoint: TokenEndpoint,
  form: URLSearchParams,
  headers: Record<string, string>,
  nowMs: number,
): Promise<void> {
  const listed = endpoint.authMethods;
  const refuse = (ours: string) =>
    new UpstreamAuthError(
      `the authorization server accepts ${listed!.join(', ') || 'no client authentication method'} at ${endpoint.url}, not ${ours} (upstream_auth's credentials)`,
    );
  if ('secret' in how) {
    if (listed === undefined || listed.length === 0 || listed.includes('client_secret_basic')) {
      headers.authorization = `Basic ${Buffer.from(`${formEncode(clientId)}:${formEncode(how.secret)}`).toString('base64')}`;
    } else if (listed.includes('client_secret_post')) {
      form.set('client_id', clientId);
      form.set('client_secret', how.secret);
    } else throw refuse('client_secret_basic or client_secret_post');
    return;
  }
  const { key, alg, kid } = how.signingKey;
  if (listed !== undefined && listed.length > 0 && !listed.includes('private_key_jwt')) throw refuse('private_key_jwt');
  if (endpoint.signingAlgs !== undefined && endpoint.signingAlgs.length > 0 && !endpoint.signingAlgs.includes(alg)) {
    throw new UpstreamAuthError(
      `the authorization server takes client assertions signed with ${endpoint.signingAlgs.join(', ')}, not ${alg} (the key of upstream_auth.private_key_file)`,
    );
  }
  const iat = Math.floor(nowMs / 1000);
  const assertion = await new SignJWT({})
    .setProtectedHeader({ alg, kid, typ: 'JWT' })
    .setIssuer(clientId)
    .setSubject(clientId)
    .setAudience(endpoint.issuer ?? endpoint.url)
    .setJti(randomUUID())
    .setIssuedAt(iat)
    .setExpirationTime(iat + ASSERTION_LIFETIME_SECONDS)
    .sign(key);
  form.set('client_assertion_type', JWT_BEARER_ASSERTION);
  form.set('client_assertion', assertion);
}
