// @ts-check
// The dashboard's client of the public /v1 API, and the shapes it answers with.
// The key comes from the session (see useSession); it is sent as a bearer token and
// never put in a URL.

/**
 * @template T
 * @typedef {Omit<import('../../../clients/typescript/wire.js').List, 'data'> & { data: T[] }} Page a list answer (the List wire type) of T
 */
// The answers' shapes are the wire types generated from schemas/api/answers/ (clients/typescript/wire.ts).
/** @typedef {import('../../../clients/typescript/wire.js').Review} Review */
/** @typedef {import('../../../clients/typescript/wire.js').DecisionWarning} Warning */
/** @typedef {import('../../../clients/typescript/wire.js').Decision} Decision */
/** @typedef {import('../../../clients/typescript/wire.js').DecisionStats} DecisionStats GET /v1/stats/decisions */
/** @typedef {import('../../../clients/typescript/wire.js').Policy} Policy */
/** @typedef {import('../../../clients/typescript/wire.js').Session} Session GET /v1/sessions/:session_id */
/** @typedef {import('../../../clients/typescript/wire.js').SessionLabel} SessionLabel */
/** @typedef {import('../../../clients/typescript/wire.js').Agent} Agent */
/** @typedef {import('../../../clients/typescript/wire.js').Budget} Budget */
/** @typedef {import('../../../clients/typescript/wire.js').WebhookEndpoint} WebhookEndpoint */
/** @typedef {import('../../../clients/typescript/wire.js').WebhookDelivery} Delivery */
/** @typedef {Delivery['attempts'][number]} DeliveryAttempt */
/** @typedef {import('../../../clients/typescript/wire.js').PolicyValidation} Validation */
/**
 * A problem in a policy as the dashboard lists it: a diagnostic of POST /v1/policies/validate
 * (PolicyDiagnostic), an entry of an error's details, or a line the dashboard makes of an error.
 * @typedef {object} Diagnostic
 * @property {'error' | 'warning'} [severity]
 * @property {string} [code] e.g. lint.conflict (a validation's diagnostics have one)
 * @property {string} message
 * @property {string} [path]
 * @property {number} [line]
 * @property {number} [column]
 */
/** An error answer's `error`, as the dashboard reads it (any part may be missing in a proxy's answer). @typedef {Partial<import('../../../clients/typescript/wire.js').ErrorBody['error']>} ErrorFields */
/**
 * Where the client gets its key, and what it does when the key is refused.
 * @typedef {{ key: () => string, refused: (message: string) => void }} SignIn
 */
/**
 * @typedef {object} RequestOptions
 * @property {unknown} [body] a string is sent as it is, anything else as JSON
 * @property {string} [contentType] of the body (application/json unless told)
 * @property {string} [accept] application/json unless told
 */

/** An API error answer: the HTTP status and the body's code, message and details. */
export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {ErrorFields} [error]
   */
  constructor(status, error) {
    super(error?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = error?.code ?? 'unknown';
    /** @type {Diagnostic[]} */
    this.details = error?.details ?? [];
  }
}

/** @type {SignIn} */
let session = { key: () => '', refused: () => {} };

/**
 * Sets where the key comes from and what a refused key (401 auth.invalid_key) does.
 * Example: `useSession({ key: () => sessionStorage.getItem('k') ?? '', refused: signOut })`
 * @param {SignIn} s
 */
export function useSession(s) {
  session = s;
}

/**
 * One API call; the answer's JSON (or text, when not JSON). Throws an ApiError on an
 * error status. Example: `await api('POST', '/v1/agents/bot/revoke')`
 * @param {string} method
 * @param {string} path
 * @param {RequestOptions} [options]
 * @returns {Promise<unknown>}
 */
export async function api(method, path, { body, contentType = 'application/json', accept = 'application/json' } = {}) {
  /** @type {Record<string, string>} */
  const headers = { authorization: `Bearer ${session.key()}`, accept };
  if (body !== undefined) headers['content-type'] = contentType;
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  const isJson = (response.headers.get('content-type') ?? '').includes('json');
  /** @type {unknown} */
  const data = isJson && text ? JSON.parse(text) : text;
  if (!response.ok) {
    const error = new ApiError(
      response.status,
      isJson ? /** @type {{ error?: ErrorFields }} */ (data).error : undefined,
    );
    if (response.status === 401 && error.code === 'auth.invalid_key')
      session.refused('The API key was refused (revoked or unknown); sign in again.');
    throw error;
  }
  return data;
}

/**
 * An error as one line: `code: message` for an API error.
 * @param {unknown} e
 * @returns {string}
 */
export function describe(e) {
  if (e instanceof ApiError) return `${e.code}: ${e.message}`;
  return String(typeof e === 'object' && e !== null && 'message' in e ? e.message : e);
}

/**
 * An API error's details as diagnostics, or the error itself as one.
 * @param {unknown} e
 * @returns {Diagnostic[]}
 */
export function problemsOf(e) {
  return e instanceof ApiError && e.details.length ? e.details : [{ severity: 'error', message: describe(e) }];
}
