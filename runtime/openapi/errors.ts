/**
 * The error answers of each operation, per HTTP status (docs/errors.md has the
 * codes): derived from what the operation has (credentials, a scope, path and
 * query parameters, a body, an Idempotency-Key) plus what OPERATIONS adds for
 * the resource (409 and 410 of confirm, ...). Every one is the Error schema.
 */
type Json = Record<string, any>;

/** What each status means wherever it is answered; an operation may name its own codes (OperationDoc.errors). */
export const ERROR_STATUS_TEXT: Record<number, string> = {
  400: 'Invalid input: validation.* (`details` lists each problem: body, path or query parameter)',
  401: 'Credentials missing or wrong: auth.invalid_key, auth.invalid_admin_token or auth.invalid_metrics_token',
  403: 'auth.scope_insufficient: the API key lacks the scope',
  404: "The id names nothing here (the resource's not_found code; another account's or environment's objects alike)",
  409: 'idempotency.in_progress: the first request with this Idempotency-Key is still running',
  410: 'Gone',
  413: 'validation.body_too_large',
  415: 'validation.unsupported_media_type: send the body as application/json',
  429: "rate_limit.exceeded (the key's platform limit or a policy's): Retry-After says when to retry",
  503: 'service.unavailable: the store is not reachable or did not answer in time (Retry-After says when to retry); nothing is decided, though a change whose answer was lost may have been stored',
};

const WRITES = new Set(['post', 'put', 'patch', 'delete']);

/**
 * The error statuses an operation answers, with their descriptions.
 *
 * @example
 * errorStatuses('get', '/v1/decisions/{id}', operation, {}) // => { 400: ..., 401: ..., 403: ..., 404: ..., 429: ..., 503: ... }
 */
export function errorStatuses(
  method: string,
  path: string,
  operation: Json,
  own: Partial<Record<number, string>>,
): Record<number, string> {
  const statuses = new Set<number>();
  const schemes = ((operation.security ?? []) as Json[]).flatMap((s) => Object.keys(s));
  const parameters = (operation.parameters ?? []) as Array<{ in: string; name: string }>;
  if (schemes.length > 0) statuses.add(401);
  if (schemes.includes('apiKey')) [403, 429, 503].forEach((s) => statuses.add(s));
  if (schemes.includes('adminToken')) statuses.add(503);
  if (parameters.some((p) => p.in === 'path')) [400, 404].forEach((s) => statuses.add(s));
  if (parameters.some((p) => p.in === 'query')) statuses.add(400);
  // Any write may carry a body, and one that is not JSON, too large or poisoned is refused.
  if (WRITES.has(method)) [400, 413, 415].forEach((s) => statuses.add(s));
  if (parameters.some((p) => p.in === 'header' && p.name === 'Idempotency-Key'))
    [400, 409].forEach((s) => statuses.add(s));
  for (const status of Object.keys(own)) statuses.add(Number(status));
  const out: Record<number, string> = {};
  for (const status of [...statuses].sort((a, b) => a - b)) {
    const text = own[status] ?? ERROR_STATUS_TEXT[status];
    if (text === undefined)
      throw new Error(`OpenAPI: no description of status ${status} for ${method.toUpperCase()} ${path}`);
    out[status] = text;
  }
  return out;
}
