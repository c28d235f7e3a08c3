/**
 * What a decision asks of the history (docs/history.md): the probes its
 * candidate policies read, each as a store check keyed by the request's scope
 * value and MATCH values; the entry it leaves when some probe of its
 * environment's policies can see it; and the scope keys locked while it reads
 * and records. Pure: no store access (./history.ts reads).
 */
import {
  actionPatternMatches,
  historyProbesFor,
  tableHistoryProbes,
  type EvaluationInput,
  type DecisionTable,
  type HistoryProbe,
} from '../../compiler/index.js';
import { MissingFieldError } from '../errors/api-error.js';
import type { HistoryCheck, HistoryRecord } from '../store/history.js';
import type { LeaseTarget } from '../store/history-leases.js';
import type { Environment, Tenant } from '../tenant.js';

/** The request fields history reads. */
export interface HistorySubject {
  agentId: string;
  sessionId: string | null;
  onBehalfOf: string | null;
  action: string;
  resource: string | null;
  amount: number | null;
  context: Record<string, unknown> | null;
}

/** A decision's history: null when nothing in its environment reads or records it (the decision path pays nothing). */
export interface HistoryPlan {
  /** The candidate policies' probes, unique by key. */
  probes: readonly HistoryProbe[];
  /** Per probe: its store check, or null when the request lacks a MATCH field (the value is 0: nothing matches). */
  checks: ReadonlyArray<HistoryCheck | null>;
  /** The entry this decision leaves (kind set by the outcome), or null when no probe of the environment sees it. */
  entry: Omit<HistoryRecord, 'kind'> | null;
  /** Scope keys locked in the gate: those the probes read and those that see the entry, sorted, unique. */
  locks: string[];
  /** Per check: its scope key (one of `locks`), or null with the check. */
  checkKeys: ReadonlyArray<string | null>;
  /** The scope keys that see the entry (those of its `scopes`), each one of `locks`. */
  entryKeys: readonly string[];
  /** Some `history.denied` probe sees the entry: a denied decision's entry counts somewhere (else only an allowed one's does). */
  deniedSeen: boolean;
  /** How far back its checks read (s): the longest window among them, 0 without any. */
  reach: number;
}

/**
 * The entry a decision of this outcome leaves, or null: none when no probe
 * sees it, and a denied decision's only when a `history.denied` probe does
 * (nothing else reads it). `counted_only`: a counted entry the limits gate
 * must not keep when a budget denies the decision.
 *
 * @example
 * const record = entryFor(plan, 'denied'); // null unless a history.denied probe sees it
 */
export function entryFor(plan: HistoryPlan, kind: 'counted' | 'denied'): HistoryRecord | null {
  const e = plan.entry;
  if (e === null || (kind === 'denied' && !plan.deniedSeen)) return null;
  // Field by field, not spread: one per recorded decision.
  const record: HistoryRecord = {
    agent_id: e.agent_id,
    session_id: e.session_id,
    on_behalf_of: e.on_behalf_of,
    action: e.action,
    kind,
    amount: e.amount,
    match_values: e.match_values,
    evaluated_at_ms: e.evaluated_at_ms,
    keep_until_ms: e.keep_until_ms,
    scopes: e.scopes,
  };
  if (!plan.deniedSeen) record.counted_only = true;
  return record;
}

/** No MATCH values: one shared empty object (a check's, an entry's), not one per decision or per entry in memory. */
export const NO_MATCH_VALUES: Record<string, unknown> = Object.freeze({});

/** What a table's probes need, computed once per table. */
interface TableHistory {
  probes: readonly HistoryProbe[];
  /** The longest window, seconds. */
  longestSeconds: number;
  /** Every MATCH field of the table's probes. */
  matchFields: readonly string[];
  /** Per action: the probes whose actions match it. */
  byAction: Map<string, readonly HistoryProbe[]>;
}

const tables = new WeakMap<DecisionTable, TableHistory>();

function tableHistory(table: DecisionTable): TableHistory {
  let t = tables.get(table);
  if (!t) {
    const probes = tableHistoryProbes(table);
    t = {
      probes,
      longestSeconds: Math.max(0, ...probes.map((p) => p.windowSeconds)),
      matchFields: [...new Set(probes.flatMap((p) => p.match))].sort(),
      byAction: new Map(),
    };
    tables.set(table, t);
  }
  return t;
}

function probesSeeing(t: TableHistory, action: string): readonly HistoryProbe[] {
  let seeing = t.byAction.get(action);
  if (!seeing) {
    seeing = t.probes.filter((p) => p.actions.some((pattern) => actionPatternMatches(pattern, action)));
    // Actions are validated (namespace.verb), but many distinct ones must not grow this without bound.
    if (t.byAction.size < 10_000) t.byAction.set(action, seeing);
  }
  return seeing;
}

/**
 * The request's value of a MATCH field (`resource`, `context.<path>`), as the
 * compiler's reference reads it (compiler/history/reference.ts): undefined when
 * the request lacks it (a null resource included; a JSON null in the context is
 * a value).
 */
export function matchValue(field: string, subject: Pick<HistorySubject, 'resource' | 'context'>): unknown {
  if (field === 'resource') return subject.resource ?? undefined;
  if (!field.startsWith('context.')) return undefined;
  let at: unknown = subject.context ?? undefined;
  for (const part of field.slice('context.'.length).split('.')) {
    if (at === null || typeof at !== 'object' || Array.isArray(at) || !Object.hasOwn(at, part)) return undefined;
    at = (at as Record<string, unknown>)[part];
  }
  return at;
}

/** The scope's value for the request: null for the environment; undefined when the request lacks it. */
function scopeKey(scope: HistoryProbe['scope'], s: HistorySubject): string | null | undefined {
  switch (scope) {
    case 'session':
      return s.sessionId ?? undefined;
    case 'user':
      return s.onBehalfOf ?? undefined;
    case 'agent':
      return s.agentId;
    case 'environment':
      return null;
  }
}

/** The bit of each scope in an entry's `scopes` (migration 024: each scope's index holds its bit's entries). */
const SCOPE_BITS = { session: 1, agent: 2, user: 4, environment: 8 } as const;

/** A scope key as the limits gate locks it and a lease names it: `<account>\x1f<environment>\x1f<scope>\x1f<value>`. */
const lockKey = (t: Tenant, scope: HistoryProbe['scope'], key: string | null) =>
  `${t.accountId}\x1f${t.environment}\x1f${scope}\x1f${key ?? ''}`;

/**
 * The parts of a scope key of a plan (`locks`, `checkKeys`, `entryKeys`), read back: what a lease on it is taken for.
 *
 * @example
 * lockTarget('acc_1\x1ftest\x1fsession\x1frun-1'); // { lockKey: ..., accountId: 'acc_1', environment: 'test', scope: 'session', key: 'run-1' }
 */
export function lockTarget(key: string): LeaseTarget {
  const [accountId, environment, scope, ...rest] = key.split('\x1f');
  return {
    lockKey: key,
    accountId: accountId!,
    environment: environment as Environment,
    scope: scope as LeaseTarget['scope'],
    key: scope === 'environment' ? null : rest.join('\x1f'),
  };
}

/**
 * The history of one decision. `reads`: whether its candidate policies' probes
 * are read (false for a decision settled before the table: a revoked agent, an
 * exhausted budget). A candidate's session or user probe without that field:
 * 400 validation.missing_field naming it.
 *
 * @example
 * const plan = planHistory(table, request, subject, principal, { reads: true, retentionDays: 30 });
 * // null: nothing reads history here
 */
export function planHistory(
  table: DecisionTable,
  request: EvaluationInput,
  subject: HistorySubject,
  tenant: Tenant,
  options: { reads: boolean; retentionDays: number | null; nowMs: number },
): HistoryPlan | null {
  const t = tableHistory(table);
  if (t.probes.length === 0) return null;
  const probes = options.reads ? historyProbesFor(table, request) : [];
  const seeing = probesSeeing(t, subject.action).filter((p) => scopeKey(p.scope, subject) !== undefined);
  if (probes.length === 0 && seeing.length === 0) return null;
  // Each scope's key built once per decision (probes and the entry share them).
  const keys: Partial<Record<HistoryProbe['scope'], string>> = {};
  const keyOf = (scope: HistoryProbe['scope'], value: string | null) => (keys[scope] ??= lockKey(tenant, scope, value));
  const locks = new Set<string>();
  const checkKeys: Array<string | null> = [];
  const checks = probes.map((p): HistoryCheck | null => {
    const key = scopeKey(p.scope, subject);
    if (key === undefined) {
      const field = p.scope === 'session' ? 'session_id' : 'on_behalf_of';
      const message = `${field} is required: a candidate policy reads history.${p.fn}(${p.actions.map((a) => `'${a}'`).join(', ')}, '${p.window}', '${p.scope}'), counted per ${p.scope}`;
      throw new MissingFieldError(message, { details: [{ path: `/${field}`, message }] });
    }
    const match: Record<string, unknown> = p.match.length === 0 ? NO_MATCH_VALUES : {};
    for (const field of p.match) {
      const value = matchValue(field, subject);
      if (value === undefined) {
        checkKeys.push(null);
        return null;
      }
      match[field] = value;
    }
    const checkKey = keyOf(p.scope, key);
    locks.add(checkKey);
    checkKeys.push(checkKey);
    return { scope: p.scope, key, actions: p.actions, window_s: p.windowSeconds, measure: p.measure, match };
  });
  let entry: HistoryPlan['entry'] = null;
  const entryKeys = [...new Set(seeing.map((p) => keyOf(p.scope, scopeKey(p.scope, subject)!)))];
  for (const k of entryKeys) locks.add(k);
  if (seeing.length > 0) {
    // No MATCH field in the table (the common case): one shared empty object, not one kept per entry in a lease's memory.
    const matchValues: Record<string, unknown> = t.matchFields.length === 0 ? NO_MATCH_VALUES : {};
    for (const field of t.matchFields) {
      const value = matchValue(field, subject);
      if (value !== undefined) matchValues[field] = value;
    }
    const keepSeconds =
      options.retentionDays === null ? t.longestSeconds : Math.min(t.longestSeconds, options.retentionDays * 86_400);
    entry = {
      agent_id: subject.agentId,
      session_id: subject.sessionId,
      on_behalf_of: subject.onBehalfOf,
      action: subject.action,
      amount: subject.amount,
      match_values: matchValues,
      evaluated_at_ms: options.nowMs,
      keep_until_ms: options.nowMs + keepSeconds * 1000,
      scopes: seeing.reduce((bits, p) => bits | SCOPE_BITS[p.scope], 0),
    };
  }
  return {
    probes,
    checks,
    entry,
    locks: [...locks].sort(),
    checkKeys,
    entryKeys,
    deniedSeen: seeing.some((p) => p.measure === 'denied'),
    reach: checks.reduce((most, c) => (c !== null && c.window_s > most ? c.window_s : most), 0),
  };
}
