/**
 * The agent directory (runtime/domain/agent-directory.ts) on both stores: what
 * this process knows of an agent's status and attributes. A store read that
 * was under way when this process wrote the agent (a PUT of attributes, a
 * revocation) or learned that another process did (NOTIFY) does not put the
 * older state back: docs/api.md#agents, the process that answered the PUT
 * uses the new attributes for its next decision. Entries live 2 s of the
 * service clock.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../runtime/clock.js';
import { createAccount } from '../../../runtime/domain/accounts.js';
import { AgentDirectory, type AgentState } from '../../../runtime/domain/agent-directory.js';
import { putAgentAttributes } from '../../../runtime/store/agents.js';
import { openTestStore, STORE_KINDS, type TestStore } from '../../helpers/postgres.js';

describe.each(STORE_KINDS)('AgentDirectory (%s store)', (kind) => {
  let store: TestStore;
  let accountId: string;
  let clock: ManualClock;
  let n = 0;
  const agent = () => `dir-bot-${++n}`;
  const stored = async (agentId: string, attributes: Record<string, unknown>) =>
    (await putAgentAttributes(store.sql, accountId, 'test', agentId, attributes, new Date(clock.now()))).row;

  beforeAll(async () => {
    store = await openTestStore(kind);
    clock = new ManualClock(Date.UTC(2026, 10, 1));
    accountId = (await createAccount(store.sql, 'directory', new Date(clock.now()))).id;
  });
  afterAll(() => store?.dispose());

  it('reads a miss once, then answers from memory for 2 s of its clock', async () => {
    const directory = new AgentDirectory(store.sql, clock);
    const id = agent();
    await stored(id, { roles: ['viewer'] });
    const first = directory.lookup(accountId, 'test', id);
    expect(first).toBeInstanceOf(Promise);
    expect(await first).toEqual({ status: 'active', attributes: { roles: ['viewer'] } });
    await stored(id, { roles: ['editor'] });
    // Trusted for 2 s: no read, the copy it holds.
    expect(directory.lookup(accountId, 'test', id)).toEqual({ status: 'active', attributes: { roles: ['viewer'] } });
    clock.advance(2);
    expect(await directory.lookup(accountId, 'test', id)).toEqual({
      status: 'active',
      attributes: { roles: ['editor'] },
    });
  });

  it('a read under way when this process writes the agent does not put the older state back', async () => {
    const directory = new AgentDirectory(store.sql, clock);
    const id = agent();
    await stored(id, { roles: ['viewer'] });
    // A decision's read began (the store says viewer) ...
    const reading = directory.lookup(accountId, 'test', id);
    expect(reading).toBeInstanceOf(Promise);
    // ... and this process answers a PUT meanwhile (its commit after the read's snapshot).
    const editor: AgentState = { status: 'active', attributes: { roles: ['editor'] } };
    directory.set(accountId, 'test', id, editor);
    await reading;
    // The next decision sees the PUT's attributes, from memory.
    expect(directory.lookup(accountId, 'test', id)).toEqual(editor);

    // Likewise a revocation through this process during a read.
    const other = agent();
    await stored(other, { roles: ['editor'] });
    const again = directory.lookup(accountId, 'test', other);
    directory.setStatus(accountId, 'test', other, 'revoked', { roles: ['editor'] });
    await again;
    expect(directory.lookup(accountId, 'test', other)).toEqual({
      status: 'revoked',
      attributes: { roles: ['editor'] },
    });
  });

  it('a read under way when another process changed the agent (NOTIFY) is not kept: the next lookup reads again', async () => {
    const directory = new AgentDirectory(store.sql, clock);
    const id = agent();
    await stored(id, { roles: ['viewer'] });
    const reading = directory.lookup(accountId, 'test', id);
    // Another process's PUT commits after the read began, and its notification arrives while the read is under way.
    const writing = stored(id, { roles: ['editor'] });
    directory.forget(accountId, 'test', id);
    await Promise.all([reading, writing]);
    const next = directory.lookup(accountId, 'test', id);
    expect(next).toBeInstanceOf(Promise);
    expect(await next).toEqual({ status: 'active', attributes: { roles: ['editor'] } });
    // That read, with nothing written meanwhile, is kept.
    expect(directory.lookup(accountId, 'test', id)).toEqual({ status: 'active', attributes: { roles: ['editor'] } });
  });

  it('an unknown agent is unknown, with no attributes, until it is stored', async () => {
    const directory = new AgentDirectory(store.sql, clock);
    const id = agent();
    expect(await directory.lookup(accountId, 'test', id)).toEqual({ status: 'unknown', attributes: {} });
    expect(await directory.lookup(accountId, 'live', id)).toEqual({ status: 'unknown', attributes: {} });
  });
});
