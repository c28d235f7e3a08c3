/**
 * `Idempotency-Key` on every POST under /v1 and /access/v1 (README: Idempotency keys), with
 * Stripe's semantics:
 *
 * - The first request with a key claims it (preHandler, after authentication
 *   and validation) and runs; its answer (status, content type, body) is stored
 *   (onSend) before it is sent.
 * - The same key again with the same method, path and body (a hash of the
 *   canonical JSON) answers the stored response with `Idempotent-Replayed: true`.
 *   Another body or path: 400 idempotency.key_reused. While the first still
 *   runs: 409 idempotency.in_progress.
 * - 5xx and 429 answers are not stored (the claim is released, a retry runs);
 *   other 4xx are, like Stripe. Requests refused before the handler (401, 403,
 *   a body the route schema refuses) claim nothing.
 * - Keys are scoped by account and environment, kept 24 h on the service clock;
 *   expired keys are taken over when reused and swept (at most once a minute,
 *   by a request that carries a key).
 * - The layer knows no resource: a route whose stored answer must differ from
 *   the one sent hands it `config.idempotency` ({@link IdempotentAnswers}).
 *   The decisions route does: a permit token is stored nowhere (the stored
 *   answer has `permit_token: null`) and a replay carries a freshly signed
 *   token for the same decision.
 * - Stored bodies are sealed with AUTHZ_MASTER_KEY when it is set (a webhook
 *   endpoint's answer carries its secret).
 *
 * A request without the header costs one header lookup per hook: no store call.
 */
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { Clock } from '../clock.js';
import { canonicalJson } from '../../compiler/index.js';
import { IdempotencyInProgressError, IdempotencyKeyReusedError, InvalidFieldError } from '../errors/api-error.js';
import { openText, sealText } from '../secrets/sealed-text.js';
import type { Sql } from '../store/connect.js';
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  findIdempotencyKey,
  releaseIdempotencyKey,
  sweepIdempotencyKeys,
  type IdempotencyRow,
  type IdempotencyScope,
} from '../store/idempotency.js';
import { isJsonMediaType, mediaTypeOf } from './media-type.js';

export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;
/** A claim older than this (its process died mid-request) may be taken over by a retry with the same body. */
export const IDEMPOTENCY_LOCK_MS = 60 * 1000;
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
const SWEEP_EVERY_MS = 60 * 1000;

/** What a route hands the idempotency layer when the answer it stores is not the answer it sent. */
export interface IdempotentAnswers {
  /** The form of a 200 answer to store (e.g. without a bearer credential). */
  toStore(body: string): string;
  /** The answer a replay sends from the stored 200 form (it may also refuse, by throwing). */
  replay(request: FastifyRequest, stored: string): Promise<string>;
}

interface Claim {
  scope: IdempotencyScope;
  fingerprint: string;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's stored and replayed forms of a 200 answer (default: the answer as sent). */
    idempotency?: IdempotentAnswers;
  }
  interface FastifyRequest {
    /** Set while this request holds an Idempotency-Key claim. */
    idempotency: Claim | null;
  }
}

const asArray = <T>(x: T | T[] | undefined): T[] => (x === undefined ? [] : Array.isArray(x) ? x : [x]);

/**
 * What a key is bound to: a hash of the method, the path (with its query) and
 * the body: the canonical JSON of a JSON body, or, for a body read as text (YAML
 * on the policy routes), its media type and the text as sent, so that it never
 * equals a JSON string of the same characters.
 */
export function requestFingerprint(method: string, url: string, body: unknown, textMediaType?: string): string {
  const content =
    textMediaType !== undefined && typeof body === 'string' ? `${textMediaType}:${body}` : canonicalJson(body ?? null);
  return createHash('sha256').update(`${method} ${url}\n${content}`).digest('hex');
}

/** The media type of a body that is not JSON (e.g. application/yaml); undefined for JSON or no body. */
function textMediaType(request: FastifyRequest): string | undefined {
  const media = mediaTypeOf(request);
  return media === undefined || isJsonMediaType(media) ? undefined : media;
}

/** The POST routes that take an Idempotency-Key: the API under /v1 and AuthZEN's under /access/v1. */
export const IDEMPOTENT_PREFIXES = ['/v1/', '/access/v1/'];

/** Call before the routes are registered: hooks are added to POST routes under the {@link IDEMPOTENT_PREFIXES}. */
export function registerIdempotency(
  app: FastifyInstance,
  deps: { sql: Sql; clock: Clock; masterKey: string | undefined },
): void {
  const { sql, clock, masterKey } = deps;
  let lastSweep = -Infinity;

  const keyOf = (request: FastifyRequest): IdempotencyScope | null => {
    const header = request.headers['idempotency-key'];
    if (header === undefined) return null;
    if (typeof header !== 'string' || header.length === 0 || header.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
      const message = `the Idempotency-Key header must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`;
      throw new InvalidFieldError(message, { details: [{ path: 'header:Idempotency-Key', message }] });
    }
    const p = request.principal;
    return { accountId: p.accountId, environment: p.environment, key: header };
  };

  /** The stored body, as the route replays it. */
  const replayBody = async (request: FastifyRequest, row: IdempotencyRow): Promise<string> => {
    const body = openText(row.body ?? '', row.body_encrypted, masterKey, 'stored idempotent answers');
    const answers = request.routeOptions.config.idempotency;
    return answers && row.status_code === 200 ? answers.replay(request, body) : body;
  };

  /** Claims the key, or answers from the store; true when the answer was sent. */
  const claimOrReplay = async (
    request: FastifyRequest,
    reply: FastifyReply,
    scope: IdempotencyScope,
  ): Promise<boolean> => {
    const now = clock.now();
    if (now - lastSweep >= SWEEP_EVERY_MS) {
      lastSweep = now;
      await sweepIdempotencyKeys(sql, now);
    }
    const print = requestFingerprint(request.method, request.url, request.body, textMediaType(request));
    // A released claim can vanish between the claim and the read: try again.
    for (let attempt = 0; attempt < 3; attempt++) {
      if (await claimIdempotencyKey(sql, scope, print, now, IDEMPOTENCY_LOCK_MS, IDEMPOTENCY_TTL_MS)) {
        request.idempotency = { scope, fingerprint: print };
        return false;
      }
      const row = await findIdempotencyKey(sql, scope, now);
      if (row === null) continue;
      if (row.fingerprint !== print) {
        throw new IdempotencyKeyReusedError(
          'this Idempotency-Key was used with another request (method, path or body); use a new key for a new request',
        );
      }
      if (row.state === 'running')
        throw new IdempotencyInProgressError('a request with this Idempotency-Key is still running; retry later');
      const body = await replayBody(request, row);
      reply.code(row.status_code!).header('idempotent-replayed', 'true');
      if (row.content_type) reply.header('content-type', row.content_type);
      reply.send(body);
      return true;
    }
    throw new IdempotencyInProgressError('a request with this Idempotency-Key is still running; retry later');
  };

  const preHandler = (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void): void => {
    let scope: IdempotencyScope | null;
    try {
      scope = keyOf(request);
    } catch (error) {
      return done(error as Error);
    }
    if (scope === null) return done();
    claimOrReplay(request, reply, scope).then(
      (sent) => {
        if (!sent) done();
      },
      (error: Error) => done(error),
    );
  };

  const store_ = async (
    request: FastifyRequest,
    reply: FastifyReply,
    claim: Claim,
    payload: unknown,
  ): Promise<void> => {
    const status = reply.statusCode;
    const text = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : null;
    if (status >= 500 || status === 429 || text === null) {
      await releaseIdempotencyKey(sql, claim.scope, claim.fingerprint);
      return;
    }
    const answers = request.routeOptions.config.idempotency;
    const body = answers && status === 200 ? answers.toStore(text) : text;
    const sealed = sealText(body, masterKey);
    const contentType = reply.getHeader('content-type');
    await completeIdempotencyKey(sql, claim.scope, claim.fingerprint, {
      status_code: status,
      content_type: typeof contentType === 'string' ? contentType : null,
      body: sealed.text,
      body_encrypted: sealed.encrypted,
    });
  };

  const onSend = (
    request: FastifyRequest,
    reply: FastifyReply,
    payload: unknown,
    done: (error: Error | null, payload?: unknown) => void,
  ): void => {
    const claim = request.idempotency;
    if (claim === null) return done(null, payload);
    request.idempotency = null;
    store_(request, reply, claim, payload).then(
      () => done(null, payload),
      (error: unknown) => {
        // The answer still goes out; the claim stays 'running' until its lock
        // lapses, then a retry with the same body runs again.
        request.log.error({ err: error }, 'idempotency: cannot store the answer');
        done(null, payload);
      },
    );
  };

  app.decorateRequest('idempotency', null);
  app.addHook('onRoute', (route: RouteOptions) => {
    const methods = asArray(route.method);
    if (!methods.includes('POST') || !IDEMPOTENT_PREFIXES.some((prefix) => route.url.startsWith(prefix))) return;
    route.preHandler = [...asArray(route.preHandler), preHandler] as RouteOptions['preHandler'];
    route.onSend = [...asArray(route.onSend), onSend] as RouteOptions['onSend'];
  });
}
