/**
 * AuthZEN 1.0 Search APIs, subjects and actions (docs/api.md#post-accessv1searchsubject-and-accessv1searchaction). Nothing is stored and no limit is used:
 * each candidate is decided as POST /v1/decisions/preview decides (the
 * current limits and budgets counted, not used), and counts when it would be
 * allowed or reviewed now; a review that needs a human's approval does not.
 *
 * - subject search: the known, not revoked agents of the environment for which
 *   the action on the resource would be allowed, sorted by id;
 * - action search: the actions named exactly (no wildcard) by enabled allow or
 *   review policies that the subject would be allowed on the resource, sorted
 *   by name, as written in the policy (`authzen.can_read_todos`).
 *
 * Both page with `page: { limit (1..100, default 100), token }` and answer
 * `page.next_token` (`""` at the end). A token holds the last result's key and
 * a digest of the search it was given for (the entities, the context and the
 * limit, as read): AuthZEN says a request with a token must be the preceding
 * request unchanged, and a changed one is refused (400). The token is MACed
 * (HMAC-SHA256 under a key derived from the master key) over the account and
 * environment that searched too: a forged or altered token, or another
 * account's or environment's, is refused (400) as not one this service gave.
 * Resource search is not offered.
 */
import { createHmac, hash, timingSafeEqual } from 'node:crypto';
import { canonicalJson } from '../../compiler/index.js';
import { InvalidFieldError } from '../errors/api-error.js';
import type { Sql } from '../store/connect.js';
import { activeAgentIds } from '../store/agents.js';
import type { Principal } from '../tenant.js';
import {
  invalid,
  isObject,
  MAX_AGENT_ID_LENGTH,
  MAX_RESOURCE_LENGTH,
  readEntity,
  toDecisionInput,
  type AuthzenEvaluation,
} from './authzen.js';
import type { DecisionInput } from './decisions.js';
import type { DecisionPreview } from './decision-state.js';
import type { PolicySets } from './policy-sets.js';

type Json = Record<string, unknown>;

export interface SearchDeps {
  sql: Sql;
  policySets: Pick<PolicySets, 'get'>;
  decisions: { preview(principal: Principal, input: DecisionInput): Promise<DecisionPreview> };
  /** The key page tokens are MACed with: `derivedKey(config.masterKey, PAGE_TOKEN_PURPOSE)`, the same in every process of a store. */
  pageTokenKey: Buffer;
}

/** What the page token key is derived for (runtime/secrets/derived-key.ts). */
export const PAGE_TOKEN_PURPOSE = 'authzen-search-page-token';

export interface SearchPage<T> {
  results: T[];
  page: { next_token: string };
}

/** The most results a page holds, and the default. */
export const MAX_SEARCH_LIMIT = 100;
/** Agents read from the store per round while a subject search fills its page. */
const AGENT_CHUNK = 200;

/** Allowed or reviewed now, without waiting for a human. */
const counts = (p: DecisionPreview): boolean => p.effect !== 'deny' && p.approval_required !== true;

/** A search as read (its kind, entities, context and page limit): what a page token is bound to. */
type SearchQuery = Json;

/** The digest of a search a token is bound to (base64url of SHA-256 of its canonical JSON, 16 characters). */
const digestOf = (query: SearchQuery): string => hash('sha256', canonicalJson(query), 'base64url').slice(0, 16);

/** The page of a search: its limit, and the position after which it starts with the search its token was given for. */
interface PageRequest {
  limit: number;
  token: { after: string; query: string } | null;
}

/** `page.limit` and `page.token` (its MAC checked for this principal; not yet checked against the search). */
function readPage(value: unknown, tokens: PageTokens): PageRequest {
  if (value === undefined || value === null) return { limit: MAX_SEARCH_LIMIT, token: null };
  if (!isObject(value)) throw invalid('/page', 'must be object');
  const { limit = MAX_SEARCH_LIMIT, token } = value;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_SEARCH_LIMIT)
    throw invalid('/page/limit', `must be an integer from 1 to ${MAX_SEARCH_LIMIT}`);
  if (token === undefined || token === null || token === '') return { limit, token: null };
  if (typeof token !== 'string') throw invalid('/page/token', 'must be string');
  return { limit, token: tokens.decode(token) };
}

/**
 * Where the page starts: after the token's key, when the token was given for
 * this very search (same entities, context and limit).
 *
 * @throws InvalidFieldError when the token was given for another search
 */
function startAfter(page: PageRequest, query: SearchQuery): string | null {
  if (page.token === null) return null;
  if (page.token.query !== digestOf({ ...query, limit: page.limit })) {
    const message =
      'page.token was given for another search: a request with a token must repeat the preceding request (subject, action, resource, context, page.limit) unchanged';
    throw new InvalidFieldError(message, { details: [{ path: '/page/token', message }] });
  }
  return page.token.after;
}

/** Page tokens of one principal's searches. */
interface PageTokens {
  encode(after: string, query: SearchQuery, limit: number): string;
  decode(token: string): { after: string; query: string };
}

/**
 * Page tokens `<payload>.<mac>`: the payload is base64url JSON of the last
 * result's key and the search's digest, the MAC base64url HMAC-SHA256 over the
 * account, the environment and the payload. Opaque to the caller.
 */
function pageTokens(key: Buffer, principal: Principal): PageTokens {
  const macOf = (payload: string) =>
    createHmac('sha256', key).update(`${principal.accountId}\n${principal.environment}\n${payload}`).digest();
  const refused = () => {
    const message =
      'page.token is not a token this service gave for this account and environment (pass page.next_token as it came)';
    return new InvalidFieldError(message, { details: [{ path: '/page/token', message }] });
  };
  return {
    encode(after, query, limit) {
      const payload = Buffer.from(JSON.stringify({ after, q: digestOf({ ...query, limit }) }), 'utf8').toString(
        'base64url',
      );
      return `${payload}.${macOf(payload).toString('base64url')}`;
    },
    decode(token) {
      const [payload, mac, ...rest] = token.split('.');
      if (payload === undefined || mac === undefined || rest.length > 0 || !/^[A-Za-z0-9_-]{43}$/.test(mac))
        throw refused();
      const expected = macOf(payload);
      // The mac's 43 characters hold 258 bits: its canonical spelling only.
      if (!timingSafeEqual(Buffer.from(mac, 'base64url'), expected) || expected.toString('base64url') !== mac)
        throw refused();
      try {
        const value = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as unknown;
        if (isObject(value) && typeof value.after === 'string' && typeof value.q === 'string')
          return { after: value.after, query: value.q };
      } catch {
        // answered below
      }
      throw refused();
    },
  };
}

function readContext(body: Json): Json | undefined {
  if (body.context === undefined || body.context === null) return undefined;
  if (!isObject(body.context)) throw invalid('/context', 'must be object');
  return body.context;
}

/**
 * POST /access/v1/search/subject: `{ subject: { type }, action, resource, context?, page? }`.
 * Answers `[{ type: <the request's subject type>, id: <agent_id> }]`.
 *
 * @throws MissingFieldError / InvalidFieldError for a bad body, InvalidActionError for an action name over 200 characters
 * @example
 * await searchSubjects(deps, principal, { subject: { type: 'user' }, action: { name: 'can_read_todos' }, resource: { type: 'todo', id: '1' } });
 * // => { results: [{ type: 'user', id: 'beth' }, ...], page: { next_token: '' } }
 */
export async function searchSubjects(
  deps: SearchDeps,
  principal: Principal,
  body: Json,
): Promise<SearchPage<{ type: string; id: string }>> {
  const subject = readEntity(body.subject, '/subject', { type: { min: 1, max: 256 } });
  const action = readEntity(body.action, '/action', { name: {} });
  const resource = readEntity(body.resource, '/resource', {
    type: { min: 1, max: 256 },
    id: { min: 1, max: MAX_RESOURCE_LENGTH },
  });
  const context = readContext(body);
  const tokens = pageTokens(deps.pageTokenKey, principal);
  const page = readPage(body.page, tokens);
  const { limit } = page;
  const query: SearchQuery = { search: 'subject', subject, action, resource, context: context ?? null };
  const after = startAfter(page, query);
  const type = subject.type as string;
  const evaluationOf = (id: string): AuthzenEvaluation =>
    ({
      subject: { ...subject, id },
      action,
      resource,
      ...(context ? { context } : {}),
    }) as unknown as AuthzenEvaluation;
  // Checked once, for the first candidate's sake: a bad action or resource is the request's 400.
  toDecisionInput(evaluationOf('x'));
  const results: Array<{ type: string; id: string }> = [];
  let cursor = after;
  for (;;) {
    const ids = await activeAgentIds(deps.sql, principal.accountId, principal.environment, cursor, AGENT_CHUNK);
    for (const id of ids) {
      if (id.length > MAX_AGENT_ID_LENGTH) continue;
      if (!counts(await deps.decisions.preview(principal, toDecisionInput(evaluationOf(id))))) continue;
      if (results.length === limit)
        return { results, page: { next_token: tokens.encode(results[limit - 1]!.id, query, limit) } };
      results.push({ type, id });
    }
    if (ids.length < AGENT_CHUNK) return { results, page: { next_token: '' } };
    cursor = ids[ids.length - 1]!;
  }
}

/**
 * POST /access/v1/search/action: `{ subject: { type, id }, resource, context?, page? }`.
 * Answers `[{ name: <the action as written in the policy> }]`.
 *
 * @throws MissingFieldError / InvalidFieldError for a bad body
 * @example
 * await searchActions(deps, principal, { subject: { type: 'user', id: 'morty' }, resource: { type: 'todo', id: '1' } });
 * // => { results: [{ name: 'authzen.can_create_todo' }, { name: 'authzen.can_read_todos' }], page: { next_token: '' } }
 */
export async function searchActions(
  deps: SearchDeps,
  principal: Principal,
  body: Json,
): Promise<SearchPage<{ name: string }>> {
  const subject = readEntity(body.subject, '/subject', {
    type: { min: 1, max: 256 },
    id: { min: 1, max: MAX_AGENT_ID_LENGTH },
  });
  const resource = readEntity(body.resource, '/resource', {
    type: { min: 1, max: 256 },
    id: { min: 1, max: MAX_RESOURCE_LENGTH },
  });
  const context = readContext(body);
  const tokens = pageTokens(deps.pageTokenKey, principal);
  const page = readPage(body.page, tokens);
  const { limit } = page;
  const query: SearchQuery = { search: 'action', subject, resource, context: context ?? null };
  const after = startAfter(page, query);
  const set = await deps.policySets.get(principal.accountId, principal.environment);
  const named = new Set<string>();
  for (const policy of set.policies) {
    if (policy.state !== 'enabled' || policy.effect === 'deny') continue;
    for (const action of policy.actions) if (!action.includes('*')) named.add(action);
  }
  const candidates = [...named].filter((name) => after === null || name > after).sort();
  const results: Array<{ name: string }> = [];
  for (const name of candidates) {
    const evaluation = {
      subject,
      action: { name },
      resource,
      ...(context ? { context } : {}),
    } as unknown as AuthzenEvaluation;
    if (!counts(await deps.decisions.preview(principal, toDecisionInput(evaluation)))) continue;
    if (results.length === limit)
      return { results, page: { next_token: tokens.encode(results[limit - 1]!.name, query, limit) } };
    results.push({ name });
  }
  return { results, page: { next_token: '' } };
}
