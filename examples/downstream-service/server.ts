/**
 * A downstream service that admits agents by permit token (docs/permits.md): each
 * route names the action and resource it performs, and a request gets through
 * only with `Authorization: Bearer <permit>` whose `act` and `res` are exactly
 * those. The token is verified locally against the authorization service's JWKS.
 *
 *   POST /orders/:order_id/refund   act payments.refund, res order:<order_id>
 *   GET  /orders/:order_id          act orders.read,     res order:<order_id>
 *
 * 401 auth.expired / auth.signature_invalid (bad or missing token), 403
 * permit.mismatch (a valid permit for something else), 503 service.unavailable
 * (the issuer's keys could not be fetched).
 *
 * The service belongs to one account and environment: permits of any other
 * (another tenant's, or test permits in a live service) are 401
 * auth.signature_invalid, whatever their action and resource.
 *
 * Run: `node dist/examples/downstream-service/server.js` (AUTHZ_ACCOUNT, the
 * account id `acc_...`, required; AUTHZ_ENVIRONMENT, `test` or `live`, default
 * `test`; AUTHZ_URL, default http://127.0.0.1:8080; PORT, default 8090; HOST,
 * default 127.0.0.1).
 */
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import {
  createPermitVerifier,
  PermitError,
  PermitSignatureInvalidError,
  PermitUnavailableError,
  type PermitVerifierCommonOptions,
} from '../../permit-verifier/index.js';
import { closeOnSignals, listenAddress, runAsMain } from '../shared/run-main.js';

export interface DownstreamServiceOptions {
  /** The authorization service's JWKS, `{base}/.well-known/jwks.json`. */
  jwksUrl: string | URL;
  /** The authorization service's base URL, as in the tokens' `iss`. */
  issuer: string;
  /** The account whose permits this service accepts (`acc_...`). */
  account: string;
  /** The environment whose permits this service accepts. */
  environment: 'test' | 'live';
  /** Further verifier options (cache and cooldown durations, a test clock). */
  verifier?: Pick<PermitVerifierCommonOptions, 'clockToleranceSeconds' | 'cooldownMs' | 'cacheMaxAgeMs' | 'now'>;
  logger?: boolean;
}

type OrderRequest = FastifyRequest<{ Params: { order_id: string } }>;

/** The token of `Authorization: Bearer <token>`. */
function bearerToken(request: FastifyRequest): string {
  const header = request.headers.authorization;
  const match = typeof header === 'string' ? /^Bearer +(\S+) *$/i.exec(header) : null;
  if (!match?.[1]) throw new PermitSignatureInvalidError('a permit token is required: Authorization: Bearer <token>');
  return match[1];
}

export async function buildDownstreamService(options: DownstreamServiceOptions): Promise<FastifyInstance> {
  const { jwksUrl, issuer, account, environment } = options;
  const verifier = createPermitVerifier({ ...options.verifier, jwksUrl, issuer, account, environment });
  const app = Fastify({ logger: options.logger ?? false });

  app.setErrorHandler((error, request, reply) => {
    if (!(error instanceof PermitError)) throw error; // Fastify's own handling
    let message = error.message;
    if (error instanceof PermitUnavailableError) {
      request.log.error({ err: error }, 'permit verification unavailable');
      message = 'the permit cannot be checked right now: the authorization service is unreachable';
    }
    if (error.status === 401) reply.header('www-authenticate', 'Bearer error="invalid_token"');
    return reply.code(error.status).send({ error: { code: error.code, message } });
  });

  app.post('/orders/:order_id/refund', async (request: OrderRequest) => {
    const orderId = request.params.order_id;
    const permit = await verifier.verify(bearerToken(request), {
      action: 'payments.refund',
      resource: `order:${orderId}`,
    });
    // A real service would refund here (and, for eff "review", flag the refund for a human).
    return { order_id: orderId, refunded: true, decision_id: permit.dec, agent_id: permit.sub, effect: permit.eff };
  });

  app.get('/orders/:order_id', async (request: OrderRequest) => {
    const orderId = request.params.order_id;
    const permit = await verifier.verify(bearerToken(request), { action: 'orders.read', resource: `order:${orderId}` });
    return {
      order_id: orderId,
      status: 'delivered',
      decision_id: permit.dec,
      agent_id: permit.sub,
      effect: permit.eff,
    };
  });

  return app;
}

async function main(): Promise<void> {
  const authzUrl = (process.env.AUTHZ_URL || 'http://127.0.0.1:8080').replace(/\/+$/, '');
  const account = process.env.AUTHZ_ACCOUNT ?? '';
  const environment = process.env.AUTHZ_ENVIRONMENT || 'test';
  if (environment !== 'test' && environment !== 'live')
    throw new Error(`AUTHZ_ENVIRONMENT must be test or live, not ${environment}`);
  if (account === '')
    throw new Error(
      'AUTHZ_ACCOUNT is required: the account (acc_...) whose permits this service accepts (`authz serve` prints it at start)',
    );
  const app = await buildDownstreamService({
    jwksUrl: `${authzUrl}/.well-known/jwks.json`,
    issuer: authzUrl,
    account,
    environment,
    logger: true,
  });
  closeOnSignals(app);
  await app.listen(listenAddress(8090));
}

runAsMain(import.meta.url, main);
