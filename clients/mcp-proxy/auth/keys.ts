/**
 * The authorization server's signing keys, for the proxy's token checks
 * (docs/mcp.md#one-gateway-for-many-agents):
 *
 * - the key set's URL is `jwks_uri` when configured, else the issuer's
 *   metadata's: RFC 8414's well-known path (inserted before the issuer's
 *   path), then OpenID discovery (appended to it, then inserted); the
 *   metadata's `issuer` must equal the configured one;
 * - the set is read again once it is older than `cacheSeconds`, and early
 *   for a `kid` it does not hold, at most once per `cooldownMs` (30 s), so a
 *   stream of tokens with made-up kids cannot make the proxy hammer the
 *   issuer; a key the issuer removed is refused once the set is read again;
 * - a failed read keeps the set already held (tried again after the
 *   cooldown); with no set at all it is a KeysUnavailableError, answered
 *   again without a new read for `RETRY_MS` (5 s), so requests during an
 *   outage do not each wait on the issuer.
 *
 * Time comes from `now()`, so a test can step over the cooldown and the cache
 * lifetime without waiting.
 */
import { createLocalJWKSet, errors, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';

/** The issuer's keys (or its metadata) could not be read: the request cannot be checked now. */
export class KeysUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeysUnavailableError';
  }
}

export interface IssuerKeysOptions {
  issuer: string;
  /** The key set's URL; when absent, discovered from the issuer's metadata. */
  jwksUri?: string;
  /** Seconds after which the set is read again. */
  cacheSeconds: number;
  /** Least time between two reads caused by an unknown kid (default 30,000). */
  cooldownMs?: number;
  /** Milliseconds since the epoch (default Date.now). */
  now?: () => number;
  /** Longest wait for one HTTP read (default 5,000 ms). */
  timeoutMs?: number;
}

/** With no key set held, how long a failed read is answered again before the next try. */
export const RETRY_MS = 5_000;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** GETs a JSON object; a KeysUnavailableError for anything else. */
async function getJson(url: string, timeoutMs: number): Promise<{ status: number; body?: Record<string, unknown> }> {
  let res: Response;
  try {
    res = await fetch(url, {
      headers: { accept: 'application/json' },
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'error',
    });
  } catch (e) {
    throw new KeysUnavailableError(`cannot reach ${url}: ${(e as Error).message}`);
  }
  if (!res.ok) {
    await res.body?.cancel();
    return { status: res.status };
  }
  const body = (await res.json().catch(() => undefined)) as unknown;
  if (!isRecord(body)) throw new KeysUnavailableError(`${url} did not answer a JSON object`);
  return { status: res.status, body };
}

/**
 * The metadata URLs tried for an issuer, in order: RFC 8414, then OpenID
 * discovery appended to the issuer (and, for an issuer with a path, inserted
 * before it).
 *
 * @example
 * ```ts
 * console.log(metadataUrls('https://login.example.com/tenant1'));
 * // => ['https://login.example.com/.well-known/oauth-authorization-server/tenant1',
 * //     'https://login.example.com/tenant1/.well-known/openid-configuration',
 * //     'https://login.example.com/.well-known/openid-configuration/tenant1']
 * ```
 */
export function metadataUrls(issuer: string): string[] {
  const url = new URL(issuer);
  const path = url.pathname.replace(/\/+$/, '');
  const urls = [
    `${url.origin}/.well-known/oauth-authorization-server${path}`,
    `${url.origin}${path}/.well-known/openid-configuration`,
  ];
  if (path !== '') urls.push(`${url.origin}/.well-known/openid-configuration${path}`);
  return urls;
}

/**
 * The key set's URL from the issuer's metadata.
 *
 * @throws KeysUnavailableError when no metadata answers, its `issuer` differs
 *   from the configured one, or it names no `jwks_uri`.
 */
export async function discoverJwksUri(issuer: string, timeoutMs = 5_000): Promise<string> {
  const tried: string[] = [];
  for (const url of metadataUrls(issuer)) {
    const { status, body } = await getJson(url, timeoutMs);
    if (!body) {
      tried.push(`${url} (HTTP ${status})`);
      continue;
    }
    if (body.issuer !== issuer)
      throw new KeysUnavailableError(
        `the metadata at ${url} names the issuer ${JSON.stringify(body.issuer)}, not ${JSON.stringify(issuer)}`,
      );
    if (typeof body.jwks_uri !== 'string' || !URL.canParse(body.jwks_uri))
      throw new KeysUnavailableError(`the metadata at ${url} has no jwks_uri`);
    return body.jwks_uri;
  }
  throw new KeysUnavailableError(`no authorization server metadata for ${issuer}: tried ${tried.join(', ')}`);
}

/**
 * The issuer's keys, as a jose key getter for `jwtVerify`.
 *
 * @example
 * ```ts
 * const keys = new IssuerKeys({ issuer: 'https://login.example.com', cacheSeconds: 300 });
 * const { payload } = await jwtVerify(token, keys.getKey, { issuer: 'https://login.example.com' });
 * ```
 */
export class IssuerKeys {
  readonly #options: IssuerKeysOptions;
  readonly #now: () => number;
  readonly #cooldownMs: number;
  #jwksUri: string | undefined;
  #local: JWTVerifyGetKey | undefined;
  /** When the set was last read (or a read was last tried). */
  #readAt = Number.NEGATIVE_INFINITY;
  #reading: Promise<void> | undefined;
  /** The last failure while no set was held, and when it happened. */
  #failure: { at: number; error: KeysUnavailableError } | undefined;
  /** How many times the key set was read (successfully or not). */
  reads = 0;

  constructor(options: IssuerKeysOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#cooldownMs = options.cooldownMs ?? 30_000;
    this.#jwksUri = options.jwksUri;
  }

  /** The key for a token's header (jose's JWTVerifyGetKey). */
  readonly getKey: JWTVerifyGetKey = async (header, token) => {
    if (!this.#local || this.#now() - this.#readAt >= this.#options.cacheSeconds * 1000) await this.#read();
    try {
      return await this.#local!(header, token);
    } catch (error) {
      if (!(error instanceof errors.JWKSNoMatchingKey) || this.#now() - this.#readAt < this.#cooldownMs) throw error;
      await this.#read();
      return this.#local!(header, token);
    }
  };

  /** Reads the set once for all callers waiting on it. */
  #read(): Promise<void> {
    if (!this.#local && this.#failure && this.#now() - this.#failure.at < RETRY_MS)
      return Promise.reject(this.#failure.error);
    this.#reading ??= this.#readOnce().finally(() => (this.#reading = undefined));
    return this.#reading;
  }

  async #readOnce(): Promise<void> {
    const timeoutMs = this.#options.timeoutMs ?? 5_000;
    this.reads++;
    try {
      this.#jwksUri ??= await discoverJwksUri(this.#options.issuer, timeoutMs);
      const { status, body } = await getJson(this.#jwksUri, timeoutMs);
      if (!body) throw new KeysUnavailableError(`the key set at ${this.#jwksUri} answered HTTP ${status}`);
      if (!Array.isArray(body.keys))
        throw new KeysUnavailableError(`the key set at ${this.#jwksUri} has no "keys" list`);
      this.#local = createLocalJWKSet(body as unknown as JSONWebKeySet);
      this.#readAt = this.#now();
      this.#failure = undefined;
    } catch (error) {
      // Keep the set held, if any, until the next try after the cooldown.
      if (this.#local) {
        this.#readAt = Math.max(this.#readAt, this.#now() - this.#options.cacheSeconds * 1000 + this.#cooldownMs);
        return;
      }
      const failure =
        error instanceof KeysUnavailableError ? error : new KeysUnavailableError((error as Error).message);
      this.#failure = { at: this.#now(), error: failure };
      throw failure;
    }
  }
}
