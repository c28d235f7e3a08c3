/**
 * Decisions are stored durably before their response is sent, through group
 * commit (runtime/shared/group-commit.ts): concurrent decisions share one statement.
 * A batch with session work (a policy's labels, a session's opening:
 * domain/session-labels.ts) writes it in the same transaction, first.
 */
import type { Sql, SqlOrTx } from '../store/connect.js';
import { writeDecisionBatch, type DecisionRow, type NewAgent } from '../store/decisions.js';
import { decisionEvent, registrationEvent } from '../events/build.js';
import { GroupCommit, type BatchObserver } from '../shared/group-commit.js';
import { addSessionLabels, type SessionAdd } from '../store/sessions.js';

export interface PendingWrite {
  /** Stored with its decision.* event (events/build.ts). */
  decision: DecisionRow;
  /** Set when the agent was not known to be in the store. */
  newAgent?: NewAgent;
  /** Labels its winning policy adds to its session, or the session's opening (domain/session-labels.ts). */
  session?: SessionAdd;
}

const agentKey = (a: NewAgent) => `${a.account_id}:${a.environment}:${a.agent_id}`;

export class DecisionWriter {
  private readonly commits: GroupCommit<PendingWrite, boolean>;

  constructor(sql: Sql, maxBatch = 500, maxInFlight = 1, observe: BatchObserver | null = null) {
    this.commits = new GroupCommit(
      async (writes) => {
        const agents = new Map<string, NewAgent>();
        for (const w of writes) if (w.newAgent) agents.set(agentKey(w.newAgent), w.newAgent);
        const newAgents = [...agents.values()];
        const write = (tx: SqlOrTx) =>
          writeDecisionBatch(
            tx,
            writes.map((w) => w.decision),
            writes.map((w) => decisionEvent(w.decision)),
            newAgents,
            newAgents.map(registrationEvent),
          );
        const sessions = writes.flatMap((w) => (w.session ? [w.session] : []));
        // Labels join their sessions atomically with the decisions that add them.
        const registered = sessions.length === 0 ? await write(sql) : await sql.begin(async (tx) => (await addSessionLabels(tx, sessions), write(tx)));
        // The first decision of the batch for a newly registered agent owns the registration.
        return writes.map((w) => w.newAgent !== undefined && registered.delete(agentKey(w.newAgent)));
      },
      maxBatch,
      maxInFlight,
      observe,
    );
  }

  /** Resolves once stored, with whether this write registered its agent. */
  write(write: PendingWrite): Promise<boolean> {
    return this.commits.submit(write);
  }

  /** Waits until everything queued so far is stored. */
  idle(): Promise<void> {
    return this.commits.idle();
  }
}
