/**
 * Decisions are stored durably before their response is sent, through group
 * commit (runtime/shared/group-commit.ts): concurrent decisions share one statement.
 * A batch with session work (a policy's labels, a session's opening:
 * domain/session-labels.ts) writes it in the same transaction, first; a
 * decision whose labels would take its session past 256 adds none and is
 * stored (and answered) denied, `session.too_many_labels`, exactly however
 * many decisions of the session are written at once, in any process.
 */
import type { Sql, SqlOrTx } from '../store/connect.js';
import { writeDecisionBatch, type DecisionRow, type NewAgent } from '../store/decisions.js';
import { LEASE_ENDED } from '../store/history-leases.js';
import type { LeasedWrite } from '../history/leases.js';
import { decisionEvent, registrationEvent } from '../events/build.js';
import { GroupCommit, type BatchObserver } from '../shared/group-commit.js';
import { addSessionLabels, type SessionAdd } from '../store/sessions.js';
import { deniedForFullSession } from './session-labels.js';

export interface PendingWrite {
  /** Stored with its decision.review event, if a review (allow and deny events are derived: events/build.ts). */
  decision: DecisionRow;
  /** Set when the agent was not known to be in the store. */
  newAgent?: NewAgent;
  /** Labels its winning policy adds to its session, or the session's opening (domain/session-labels.ts). */
  session?: SessionAdd;
  /** Decided from history leases (runtime/history/leases.ts): its entry and the leases' epochs, written with it. */
  history?: LeasedWrite;
}

const agentKey = (a: NewAgent) => `${a.account_id}:${a.environment}:${a.agent_id}`;

/** What a write stored: whether it registered its agent, and the decision as stored (a full session's: denied). */
export interface Written {
  registered: boolean;
  decision: DecisionRow;
  /** Not stored: a history lease it was decided from ended (it is decided again through the limits gate). */
  leaseEnded?: true;
}

export class DecisionWriter {
  private readonly commits: GroupCommit<PendingWrite, Written>;

  constructor(sql: Sql, maxBatch = 500, maxInFlight = 1, observe: BatchObserver | null = null) {
    const run = async (all: PendingWrite[]): Promise<Written[]> => {
      // Decided from leases whose memory this process dropped since (a write before it failed): not sent.
      const ended = all.map((w) => w.history !== undefined && !w.history.valid());
      const pending = all.filter((_, i) => !ended[i]);
      let written: Written[];
      try {
        written = pending.length === 0 ? [] : await runBatch(pending);
        for (const w of pending) w.history?.stored();
      } catch (error) {
        // Alone (a failed batch is retried item by item): a write decided from leases drops their memory.
        const only = pending.length === 1 ? pending[0]!.history : undefined;
        if (only === undefined) throw error;
        only.failed();
        if ((error as { code?: string }).code !== LEASE_ENDED) throw error;
        written = [{ registered: false, decision: pending[0]!.decision, leaseEnded: true }];
      }
      let next = 0;
      return all.map((w, i) =>
        ended[i] ? { registered: false, decision: w.decision, leaseEnded: true as const } : written[next++]!,
      );
    };
    this.commits = new GroupCommit(run, maxBatch, maxInFlight, observe);
    const runBatch = async (pending: PendingWrite[]): Promise<Written[]> => {
      const agents = new Map<string, NewAgent>();
      for (const w of pending) if (w.newAgent) agents.set(agentKey(w.newAgent), w.newAgent);
      const newAgents = [...agents.values()];
      const leased = pending.flatMap((w) => (w.history ? [w.history] : []));
      const write = (tx: SqlOrTx, decisions: readonly DecisionRow[]) =>
        writeDecisionBatch(
          tx,
          decisions,
          decisions.flatMap((d) => decisionEvent(d) ?? []),
          newAgents,
          newAgents.map(registrationEvent),
          leased.length === 0
            ? null
            : {
                entries: pending.map((w) => w.history?.entry ?? null),
                fences: leased.flatMap((h) => h.fences),
                locked: leased.flatMap((h) => (h.locks ? h.fences.map((f) => f.lock_key) : [])),
                after: leased.flatMap((h) => h.after),
              },
        );
      const withSession = pending.flatMap((w, i) => (w.session ? [i] : []));
      let decisions = pending.map((w) => w.decision);
      // Labels join their sessions atomically with the decisions that add them; a session
      // the labels would take past its cap adds none, and the decision is denied instead.
      const registered =
        withSession.length === 0
          ? await write(sql, decisions)
          : await sql.begin(async (tx) => {
              const outcomes = await addSessionLabels(
                tx,
                withSession.map((i) => pending[i]!.session!),
              );
              const full = new Set(withSession.filter((_, k) => outcomes[k] === 'full'));
              if (full.size > 0) decisions = decisions.map((d, i) => (full.has(i) ? deniedForFullSession(d) : d));
              return write(tx, decisions);
            });
      // The first decision of the batch for a newly registered agent owns the registration.
      return pending.map((w, i) => ({
        registered: w.newAgent !== undefined && registered.delete(agentKey(w.newAgent)),
        decision: decisions[i]!,
      }));
    };
  }

  /** Resolves once stored, with whether this write registered its agent and the decision as stored. */
  write(write: PendingWrite): Promise<Written> {
    return this.commits.submit(write);
  }

  /** Waits until everything queued so far is stored. */
  idle(): Promise<void> {
    return this.commits.idle();
  }
}
