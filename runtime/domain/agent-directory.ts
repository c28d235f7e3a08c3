/**
 * What this process knows of agents, so a decision needs no store round trip
 * for an agent it has seen: its status and its attributes (read by conditions
 * as `agent.attributes.…`). A miss reads the store once; entries are trusted
 * for `ttlMs` (2 s): a revocation, a restore or new attributes through this
 * process apply at once, through another by NOTIFY (the `agents` channel of store/channels.ts),
 * and within the TTL at worst when a notification was missed.
 */
import type { Environment } from '../tenant.js';
import { TtlCache } from '../shared/ttl-cache.js';
import type { Clock } from '../clock.js';
import type { Sql } from '../store/connect.js';
import { findAgent, type AgentStatus } from '../store/agents.js';

/** `unknown`: not in the store yet; the decision registers it. */
export type KnownStatus = AgentStatus | 'unknown';

/** An agent as a decision sees it. */
export interface AgentState {
  status: KnownStatus;
  /** The stored attributes (`{}` when none were set or the agent is unknown). */
  attributes: Record<string, unknown>;
}

/** How long an entry is trusted (docs/api.md#agents: other processes see new attributes within 2 seconds). */
export const AGENT_TTL_MS = 2_000;

/** The attributes of an agent that has none (shared, frozen). */
export const NO_ATTRIBUTES: Readonly<Record<string, unknown>> = Object.freeze({});

export class AgentDirectory {
  private readonly cache: TtlCache<AgentState>;
  /**
   * The store reads in flight, by key: a read keeps what it found only when no
   * write (set, setStatus, forget) came for its agent while it was under way,
   * so a read that began before a PUT cannot put the old attributes back.
   */
  private readonly reads = new Map<string, symbol>();

  constructor(
    private readonly sql: Sql,
    clock: Clock,
    ttlMs = AGENT_TTL_MS,
    maxEntries = 200_000,
  ) {
    this.cache = new TtlCache(clock, ttlMs, maxEntries);
  }

  /**
   * The agent's status and attributes: from memory when a live entry exists
   * (no promise, no allocation), else read from the store once.
   *
   * @example
   * const { status, attributes } = await directory.lookup('acc_1', 'test', 'support-bot');
   */
  lookup(accountId: string, environment: Environment, agentId: string): AgentState | Promise<AgentState> {
    const k = key(accountId, environment, agentId);
    const hit = this.cache.get(k);
    if (hit) return hit.value;
    const read = Symbol(k);
    this.reads.set(k, read);
    return findAgent(this.sql, accountId, environment, agentId).then(
      (row) => {
        const state: AgentState = row
          ? { status: row.status, attributes: row.attributes }
          : { status: 'unknown', attributes: NO_ATTRIBUTES };
        if (this.reads.get(k) !== read) return this.cache.get(k)?.value ?? state;
        this.reads.delete(k);
        this.cache.set(k, state);
        return state;
      },
      (error: unknown) => {
        if (this.reads.get(k) === read) this.reads.delete(k);
        throw error;
      },
    );
  }

  /** The agent's status alone (see lookup). */
  status(accountId: string, environment: Environment, agentId: string): KnownStatus | Promise<KnownStatus> {
    const state = this.lookup(accountId, environment, agentId);
    return state instanceof Promise ? state.then((s) => s.status) : state.status;
  }

  /** What this process now knows of the agent (after its own write). */
  set(accountId: string, environment: Environment, agentId: string, state: AgentState): void {
    const k = key(accountId, environment, agentId);
    this.reads.delete(k);
    this.cache.set(k, state);
  }

  /**
   * A new status (a NOTIFY, a registration): kept with the attributes this
   * process holds; without an entry, `known` are the attributes to hold (a
   * newly registered agent has none), or the entry is left to the next read.
   */
  setStatus(
    accountId: string,
    environment: Environment,
    agentId: string,
    status: KnownStatus,
    known?: Record<string, unknown>,
  ): void {
    const k = key(accountId, environment, agentId);
    this.reads.delete(k);
    const hit = this.cache.get(k);
    if (hit) this.cache.set(k, { status, attributes: hit.value.attributes });
    else if (known) this.cache.set(k, { status, attributes: known });
  }

  /** Forgets the agent: its next decision reads the store (another process changed it). */
  forget(accountId: string, environment: Environment, agentId: string): void {
    const k = key(accountId, environment, agentId);
    this.reads.delete(k);
    this.cache.delete(k);
  }
}

const key = (accountId: string, environment: Environment, agentId: string) => `${accountId}:${environment}:${agentId}`;
