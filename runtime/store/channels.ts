/**
 * The store's named coordination points: the NOTIFY channels every server
 * process LISTENs on, with their payload formats, and the advisory-lock keys.
 * Senders and listeners both go through these functions, so a channel's name
 * and payload are written in one place.
 *
 * Budget exhaustion is announced from PL/pgSQL (`authz_budget_events`,
 * functions/authz_budget_events.sql) on {@link CHANNELS.budgets}, with the usage row
 * as JSON; runtime/background/budgets.ts listens.
 */
import type { Environment } from '../tenant.js';
import type { Sql, SqlOrTx } from './connect.js';

export const CHANNELS = {
  /** A policy set's new version: `account:environment:version`. */
  policies: 'authz_policies',
  /** An agent's new status: `account:environment:status:agent_id` (status `changed`: new attributes). */
  agents: 'authz_agents',
  /** An exhausted budget (from PL/pgSQL): the usage row as JSON. */
  budgets: 'authz_budgets',
  /** A new signing key: its kid. */
  keys: 'authz_keys',
  /** A revoked API key: its id. */
  apiKeys: 'authz_api_keys',
  /** A decision's review changed (a verdict, an approval timeout): `account:environment:decision_id`. */
  reviews: 'authz_reviews',
} as const;
export type Channel = (typeof CHANNELS)[keyof typeof CHANNELS];

/** Transaction-level advisory locks (pg_advisory_xact_lock keys). */
export const LOCKS = {
  /** Seeding a fresh store (one process seeds it). */
  seed: 7261,
  /** Creating or rotating the signing key. */
  signingKeys: 7262,
  /** Applying migrations. */
  migrations: 7_263_511_904,
  /** Creating and dropping the decision log's daily partitions (store/log-partitions.ts). */
  logPartitions: 7264,
} as const;

/** Holds `lock` until the transaction ends. */
export async function lockFor(tx: SqlOrTx, lock: (typeof LOCKS)[keyof typeof LOCKS]): Promise<void> {
  await tx`select pg_advisory_xact_lock(${lock})`;
}

/** Sends `payload` on `channel` (delivered when the transaction commits). */
export async function notify(tx: SqlOrTx, channel: Channel, payload: string): Promise<void> {
  await tx`select pg_notify(${channel}, ${payload})`;
}

/**
 * Listens on `channel`; the returned handle stops it. `onListen` runs each time
 * the LISTEN is (re)established, e.g. after a reconnect, when notifications
 * sent meanwhile were missed.
 */
export function listen(
  sql: Sql,
  channel: Channel,
  onPayload: (payload: string) => void,
  onListen?: () => void,
): Promise<{ unlisten(): Promise<void> }> {
  return onListen ? sql.listen(channel, onPayload, onListen) : sql.listen(channel, onPayload);
}

export interface PolicySetChange {
  accountId: string;
  environment: Environment;
  version: number;
}

export const policySetPayload = (c: PolicySetChange): string => `${c.accountId}:${c.environment}:${c.version}`;

export function parsePolicySetPayload(payload: string): PolicySetChange | null {
  const [accountId, environment, version] = payload.split(':');
  if (!accountId || (environment !== 'test' && environment !== 'live') || !version) return null;
  return { accountId, environment, version: Number(version) };
}

export interface AgentStatusChange {
  accountId: string;
  environment: Environment;
  status: 'active' | 'revoked';
  agentId: string;
}

export const agentStatusPayload = (c: AgentStatusChange): string =>
  `${c.accountId}:${c.environment}:${c.status}:${c.agentId}`;

/** Something else of the agent changed (its attributes): `account:environment:changed:agent_id`; the listener re-reads it. */
export const agentChangedPayload = (c: Omit<AgentStatusChange, 'status'>): string =>
  `${c.accountId}:${c.environment}:changed:${c.agentId}`;

/** A payload of the agents channel: a new status, or `changed` (re-read the agent). */
export function parseAgentStatusPayload(
  payload: string,
): (Omit<AgentStatusChange, 'status'> & { status: AgentStatusChange['status'] | 'changed' }) | null {
  const [accountId, environment, status, ...rest] = payload.split(':');
  if (!accountId || (environment !== 'test' && environment !== 'live') || !status) return null;
  return {
    accountId,
    environment,
    status: status === 'revoked' ? 'revoked' : status === 'changed' ? 'changed' : 'active',
    agentId: rest.join(':'),
  };
}

export interface ReviewChange {
  accountId: string;
  environment: Environment;
  decisionId: string;
}

export const reviewPayload = (c: ReviewChange): string => `${c.accountId}:${c.environment}:${c.decisionId}`;

export function parseReviewPayload(payload: string): ReviewChange | null {
  const [accountId, environment, decisionId] = payload.split(':');
  if (!accountId || (environment !== 'test' && environment !== 'live') || !decisionId) return null;
  return { accountId, environment, decisionId };
}
