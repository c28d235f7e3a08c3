// @ts-check
// The dashboard's client of the public /v1 API, and the shapes it answers with.
// The key comes from the session (see useSession); it is sent as a bearer token and
// never put in a URL.

/**
 * @template T
 * @typedef {{ object: 'list', data: T[], has_more: boolean, url: string }} Page
 */
/**
 * A decision's review (review decisions only).
 * @typedef {object} Review
 * @property {'open' | 'approved' | 'denied'} status
 * @property {string | null} reviewer
 * @property {string | null} note
 * @property {string | null} reviewed_at
 */
/**
 * @typedef {object} Warning
 * @property {string} code
 * @property {string} message
 * @property {string[]} [policy_ids]
 */
/**
 * @typedef {object} Decision
 * @property {string} id
 * @property {'allow' | 'deny' | 'review'} effect
 * @property {string} reason
 * @property {string} agent_id
 * @property {string} action
 * @property {string | null} resource
 * @property {number | null} [amount]
 * @property {string | null} policy_id
 * @property {string} status
 * @property {string} evaluated_at
 * @property {string} [expires_at]
 * @property {number} [ttl_seconds]
 * @property {string | null} [resolved_at]
 * @property {Record<string, unknown> | null} [context]
 * @property {string | null} [session_id]
 * @property {string | null} [on_behalf_of]
 * @property {Review | null} [review]
 * @property {string | null} [approval_expires_at]
 * @property {{ matched_policy_ids: string[], warnings: Warning[], shadow?: { effect: string, reason: string, policy_id: string | null } }} [metadata]
 */
/**
 * GET /v1/stats/decisions.
 * @typedef {object} DecisionStats
 * @property {number} minutes
 * @property {string} since
 * @property {string} until
 * @property {Array<{ minute: string, allow: number, deny: number, review: number }>} per_minute
 * @property {{ allow: number, deny: number, review: number }} totals
 * @property {Array<{ agent_id: string, count: number }>} top_denied_agents
 * @property {Array<{ action: string, count: number }>} top_denied_actions
 */
/**
 * A policy as JSON (the fields the dashboard shows; PUT takes it back whole).
 * @typedef {object} Policy
 * @property {string} id
 * @property {string} name
 * @property {'allow' | 'deny' | 'review'} effect
 * @property {number} [priority]
 * @property {string[]} [agents] agent id globs; absent: every agent
 * @property {string[]} [actions]
 * @property {string[]} [resources] resource globs; absent: any resource
 * @property {string} [condition]
 * @property {{ unit: string, limit: number, period: string, scope?: string }} [budget]
 * @property {{ required: boolean, timeout_seconds?: number }} [approval]
 * @property {string} state
 * @property {string} [updated_at]
 */
/**
 * @typedef {object} Agent
 * @property {string} agent_id
 * @property {'active' | 'revoked'} status
 * @property {string} first_seen_at
 * @property {string | null} revoked_at
 */
/**
 * @typedef {object} Budget
 * @property {string} policy_id
 * @property {string | null} agent_id null for a user budget
 * @property {'agent' | 'session' | 'user'} [scope] absent from a service without spend controls: agent
 * @property {string | null} [session_id]
 * @property {string | null} [on_behalf_of]
 * @property {string} unit
 * @property {number} limit
 * @property {number} consumed
 * @property {number} held
 * @property {string} period
 * @property {string} period_resets_at
 * @property {number | null} threshold_alert
 * @property {string} status
 */
/**
 * @typedef {object} WebhookEndpoint
 * @property {string} id
 * @property {string} url
 * @property {string[]} events
 * @property {string | null} description
 * @property {string} status
 */
/**
 * @typedef {object} DeliveryAttempt
 * @property {string} started_at
 * @property {number | null} status_code
 * @property {string | null} error
 * @property {number | null} duration_ms
 * @property {string | null} next_attempt_at
 */
/**
 * @typedef {object} Delivery
 * @property {string} id
 * @property {string} event_id
 * @property {string} event_type
 * @property {string} status
 * @property {number | null} status_code
 * @property {string | null} error
 * @property {string | null} next_attempt_at
 * @property {string | null} replay_of
 * @property {string} created_at
 * @property {DeliveryAttempt[]} attempts
 */
/**
 * A problem in a policy (from POST /v1/policies/validate, or an error's details).
 * @typedef {object} Diagnostic
 * @property {'error' | 'warning'} [severity]
 * @property {string} message
 * @property {string} [path]
 * @property {number} [line]
 * @property {number} [column]
 */
/** @typedef {{ object: 'policy_validation', valid: boolean, diagnostics: Diagnostic[] }} Validation */
/** @typedef {{ code?: string, message?: string, details?: Diagnostic[] }} ErrorBody */
/**
 * Where the client gets its key, and what it does when the key is refused.
 * @typedef {{ key: () => string, refused: (message: string) => void }} Session
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
   * @param {ErrorBody} [error]
   */
  constructor(status, error) {
    super(error?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = error?.code ?? 'unknown';
    /** @type {Diagnostic[]} */
    this.details = error?.details ?? [];
  }
}

/** @type {Session} */
let session = { key: () => '', refused: () => {} };

/**
 * Sets where the key comes from and what a refused key (401 auth.invalid_key) does.
 * Example: `useSession({ key: () => sessionStorage.getItem('k') ?? '', refused: signOut })`
 * @param {Session} s
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
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await response.text();
  const isJson = (response.headers.get('content-type') ?? '').includes('json');
  /** @type {unknown} */
  const data = isJson && text ? JSON.parse(text) : text;
  if (!response.ok) {
    const error = new ApiError(response.status, isJson ? /** @type {{ error?: ErrorBody }} */ (data).error : undefined);
    if (response.status === 401 && error.code === 'auth.invalid_key') session.refused('The API key was refused (revoked or unknown); sign in again.');
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
