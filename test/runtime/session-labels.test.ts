/**
 * Labels on sessions, on both stores (docs/api.md#sessions, docs/policies.md#labels):
 * POST /v1/sessions/:session_id/labels (source api) and GET /v1/sessions/:session_id,
 * a policy's `labels:` joining the session when its decision is allowed (a review:
 * on approval), conditions on `session.labels` (contains, and in ||), the caps
 * (400 validation.too_many_labels, 409 session.too_many_labels), the full-session
 * deny, `metadata.session_labels`, and the idle end on the manual clock.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';
import { agent, decide as kitDecide, expectError, review } from '../helpers/kit.js';
import type { Session } from '../../clients/typescript/wire.js';

const sessionPath = (id: string) => `/v1/sessions/${encodeURIComponent(id)}`;
let n = 0;
const sessionId = (tag: string) => `run-${tag}-${++n}-${Math.random().toString(36).slice(2, 8)}`;
const HOUR = 3600;

describe.each(STORE_KINDS)('session labels (%s)', (kind) => {
  let rt: TestRuntime;
  const addLabels = (id: string, body: object, key = rt.testKey) =>
    rt.call(key, { method: 'POST', url: `${sessionPath(id)}/labels`, payload: body });
  const getSession = async (id: string) => (await rt.getOk(sessionPath(id))) as unknown as Session;
  const decide = (body: object) => kitDecide(rt, body);

  beforeAll(async () => {
    rt = await startRuntime(kind);
    await rt.setPolicies([
      // Reading files labels the session private; the inbox labels it untrusted.
      { id: 'pol_files', effect: 'allow', actions: ['files.read'], labels: ['private'] },
      { id: 'pol_inbox', effect: 'allow', actions: ['inbox.read'], labels: ['untrusted'] },
      { id: 'pol_many', effect: 'allow', actions: ['tools.many'], labels: ['l-new-1', 'l-new-2'] },
      // Sending mail: allowed until the session holds both; then a human decides.
      { id: 'pol_send', effect: 'allow', actions: ['email.send'] },
      {
        id: 'pol_send_review',
        effect: 'review',
        priority: 10,
        actions: ['email.send'],
        condition: "contains(session.labels, 'private') && contains(session.labels, 'untrusted')",
      },
      // In ||: either label blocks an upload.
      { id: 'pol_upload', effect: 'allow', actions: ['files.upload'] },
      {
        id: 'pol_upload_deny',
        effect: 'deny',
        priority: 10,
        actions: ['files.upload'],
        condition: "contains(session.labels, 'secret') || contains(session.labels, 'pii')",
      },
      // A review awaiting approval adds its labels once approved.
      {
        id: 'pol_web',
        effect: 'review',
        actions: ['web.fetch'],
        labels: ['external'],
        approval: { required: true, timeout_seconds: 600 },
      },
      { id: 'pol_plain', effect: 'allow', actions: ['orders.read'] },
      // Ten tools, each labelling the session with a label of its own (the cap race).
      ...Array.from({ length: 10 }, (_, i) => ({
        id: `pol_race_${i}`,
        effect: 'allow' as const,
        actions: [`race.t${i}`],
        labels: [`race-${i}`],
      })),
    ]);
  });
  afterAll(() => rt.close());

  it('POST labels (source api) creates the session; GET shows it, labels in order, detail kept; repeats add nothing', async () => {
    const id = sessionId('api');
    expectError(await rt.call(rt.testKey, { method: 'GET', url: sessionPath(id) }), 404, 'session.not_found');
    const at = new Date(rt.clock.now()).toISOString();
    const r = await addLabels(id, {
      labels: ['private', 'pii', 'private'],
      agent_id: 'files-bot',
      detail: 'read /hr/salaries.csv',
    });
    expect(r.statusCode, r.body).toBe(200);
    expect(json(r)).toEqual({
      object: 'session',
      id,
      labels: [
        { label: 'pii', added_at: at, source: 'api', detail: 'read /hr/salaries.csv' },
        { label: 'private', added_at: at, source: 'api', detail: 'read /hr/salaries.csv' },
      ],
      decisions: 0,
      last_decision_at: null,
    });
    rt.clock.advance(5);
    const again = json<Session>(await addLabels(id, { labels: ['private', 'untrusted'], agent_id: 'web-bot' }));
    expect(again.labels.map((l) => l.label)).toEqual(['pii', 'private', 'untrusted']);
    expect(again.labels[1]).toEqual({ label: 'private', added_at: at, source: 'api', detail: 'read /hr/salaries.csv' });
    expect(again.labels[2]).toEqual({
      label: 'untrusted',
      added_at: new Date(rt.clock.now()).toISOString(),
      source: 'api',
    });
    expect(await getSession(id)).toEqual(again);
    // Another environment and another account do not see it.
    expectError(await rt.call(rt.liveKey, { method: 'GET', url: sessionPath(id) }), 404, 'session.not_found');
    expectError(await rt.call(rt.otherKey, { method: 'GET', url: sessionPath(id) }), 404, 'session.not_found');
  });

  it('bad input: a bad label 400 naming it, more than 32 labels 400 validation.too_many_labels, a missing agent_id 400; scopes', async () => {
    const id = sessionId('bad');
    const bad = expectError(
      await addLabels(id, { labels: ['ok', 'Private'], agent_id: 'a' }),
      400,
      'validation.invalid_field',
    );
    expect(bad.message).toContain('"Private"');
    expect(bad.details).toEqual([{ path: '/labels/1', message: expect.stringContaining('[a-z][a-z0-9_.-]{0,63}') }]);
    expectError(await addLabels(id, { labels: ['x'.repeat(65)], agent_id: 'a' }), 400, 'validation.invalid_field');
    const many = Array.from({ length: 33 }, (_, i) => `l${i}`);
    expect(
      expectError(await addLabels(id, { labels: many, agent_id: 'a' }), 400, 'validation.too_many_labels').message,
    ).toContain('at most 32');
    expectError(await addLabels(id, { labels: ['ok'] }), 400, 'validation.missing_field');
    expectError(await addLabels(id, { labels: [], agent_id: 'a' }), 400, 'validation.invalid_field');
    // Nothing was added by any of them.
    expectError(await rt.call(rt.testKey, { method: 'GET', url: sessionPath(id) }), 404, 'session.not_found');
    const reader = await rt.keyWith(['decisions:read']);
    expectError(await addLabels(id, { labels: ['ok'], agent_id: 'a' }, reader), 403, 'auth.scope_insufficient');
    const writer = await rt.keyWith(['decisions:write']);
    expect((await addLabels(id, { labels: ['ok'], agent_id: 'a' }, writer)).statusCode).toBe(200);
    expectError(await rt.call(writer, { method: 'GET', url: sessionPath(id) }), 403, 'auth.scope_insufficient');
    expect((await rt.getOk(sessionPath(id), reader)).id).toBe(id);
  });

  it('256 labels at most: past it 409 session.too_many_labels and nothing added; labels already held still pass', async () => {
    const id = sessionId('cap');
    for (let i = 0; i < 8; i++) {
      const r = await addLabels(id, { labels: Array.from({ length: 32 }, (_, j) => `l${i * 32 + j}`), agent_id: 'a' });
      expect(r.statusCode, r.body).toBe(200);
    }
    expect((await getSession(id)).labels).toHaveLength(256);
    const full = expectError(
      await addLabels(id, { labels: ['l0', 'one-more'], agent_id: 'a' }),
      409,
      'session.too_many_labels',
    );
    expect(full.message).toContain('256');
    expect((await getSession(id)).labels.map((l) => l.label)).not.toContain('one-more');
    expect((await addLabels(id, { labels: ['l0', 'l255'], agent_id: 'a' })).statusCode).toBe(200);
  });

  it("a policy's labels join the session when its decision is allowed; the next decision is decided with them (metadata.session_labels)", async () => {
    const id = sessionId('policy');
    const a = agent('mail');
    const plain = await decide({ agent_id: a, action: 'orders.read', session_id: id });
    // No candidate policy reads or adds labels: nothing read, none answered.
    expect(plain.metadata.session_labels).toBeUndefined();
    const first = await decide({ agent_id: a, action: 'email.send', session_id: id, resource: 'mailto:x@out.example' });
    expect(first).toMatchObject({ effect: 'allow', policy_id: 'pol_send', metadata: { session_labels: [] } });
    const read = await decide({ agent_id: a, action: 'files.read', session_id: id });
    expect(read).toMatchObject({ effect: 'allow', metadata: { session_labels: [] } });
    rt.clock.advance(1);
    const inbox = await decide({ agent_id: a, action: 'inbox.read', session_id: id });
    expect(inbox.metadata.session_labels).toEqual(['private']);
    const session = await getSession(id);
    expect(session).toMatchObject({ object: 'session', id, decisions: 4, last_decision_at: inbox.evaluated_at });
    expect(session.labels).toEqual([
      { label: 'private', added_at: read.evaluated_at, source: 'policy', decision_id: read.id },
      { label: 'untrusted', added_at: inbox.evaluated_at, source: 'policy', decision_id: inbox.id },
    ]);
    const send = await decide({ agent_id: a, action: 'email.send', session_id: id });
    expect(send).toMatchObject({
      effect: 'review',
      policy_id: 'pol_send_review',
      metadata: { session_labels: ['private', 'untrusted'] },
    });
    // The same request in another session is allowed: labels belong to their session.
    expect((await decide({ agent_id: a, action: 'email.send', session_id: sessionId('other') })).effect).toBe('allow');
    // Read back, the decision keeps the set it was decided with.
    expect((await rt.getOk(`/v1/decisions/${send.id}`)).metadata).toMatchObject({
      session_labels: ['private', 'untrusted'],
    });
  });

  it('API labels count in conditions at the next decision, contains in ||', async () => {
    const id = sessionId('cond');
    const a = agent('up');
    expect((await decide({ agent_id: a, action: 'files.upload', session_id: id })).effect).toBe('allow');
    await addLabels(id, { labels: ['pii'], agent_id: a });
    expect(await decide({ agent_id: a, action: 'files.upload', session_id: id })).toMatchObject({
      effect: 'deny',
      policy_id: 'pol_upload_deny',
    });
    const other = sessionId('cond2');
    await addLabels(other, { labels: ['secret'], agent_id: a });
    expect(await decide({ agent_id: a, action: 'files.upload', session_id: other })).toMatchObject({
      effect: 'deny',
      metadata: { session_labels: ['secret'] },
    });
    // Without a session there are no labels.
    expect((await decide({ agent_id: a, action: 'files.upload' })).effect).toBe('allow');
  });

  it('a denied decision adds nothing; a full session denies a decision whose policy would add a new label (session.too_many_labels)', async () => {
    const id = sessionId('full');
    const a = agent('full');
    for (let i = 0; i < 8; i++)
      await addLabels(id, { labels: Array.from({ length: 32 }, (_, j) => `f${i * 32 + j}`), agent_id: a });
    const denied = await decide({ agent_id: a, action: 'files.read', session_id: id });
    expect(denied).toMatchObject({
      effect: 'deny',
      reason: 'session.too_many_labels',
      policy_id: 'pol_files',
      permit_token: null,
    });
    expect((await getSession(id)).labels.map((l) => l.label)).not.toContain('private');
    // A policy that adds nothing new, or none, still decides.
    await rt.call(rt.testKey, {
      method: 'POST',
      url: `${sessionPath(sessionId('x'))}/labels`,
      payload: { labels: ['a'], agent_id: a },
    });
    expect((await decide({ agent_id: a, action: 'orders.read', session_id: id })).effect).toBe('allow');
    const one = sessionId('one-left');
    for (let i = 0; i < 7; i++)
      await addLabels(one, { labels: Array.from({ length: 32 }, (_, j) => `g${i * 32 + j}`), agent_id: a });
    await addLabels(one, { labels: Array.from({ length: 31 }, (_, j) => `h${j}`), agent_id: a });
    // 255 held: two new ones would pass 256.
    expect((await decide({ agent_id: a, action: 'tools.many', session_id: one })).reason).toBe(
      'session.too_many_labels',
    );
    expect((await decide({ agent_id: a, action: 'files.read', session_id: one })).effect).toBe('allow');
    expect((await getSession(one)).labels).toHaveLength(256);
  });

  it('the cap is exact under concurrency: with one label left, ten decisions adding ten new labels at once give one allow and nine denials', async () => {
    const id = sessionId('cap-race');
    const a = agent('cap-race');
    for (let i = 0; i < 7; i++)
      await addLabels(id, { labels: Array.from({ length: 32 }, (_, j) => `c${i * 32 + j}`), agent_id: a });
    await addLabels(id, { labels: Array.from({ length: 31 }, (_, j) => `d${j}`), agent_id: a });
    // Each one, decided alone with 255 held, would pass: the store's check under the session's lock decides.
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => decide({ agent_id: a, action: `race.t${i}`, session_id: id })),
    );
    const allowed = answers.filter((d) => d.effect === 'allow');
    expect(allowed).toHaveLength(1);
    const denied = answers.filter((d) => d.effect === 'deny');
    expect(denied).toHaveLength(9);
    for (const d of denied)
      expect(d).toMatchObject({ reason: 'session.too_many_labels', status: 'denied', permit_token: null });
    expect(allowed[0]!.permit_token).toEqual(expect.any(String));
    const session = await getSession(id);
    expect(session.labels).toHaveLength(256);
    expect(session.labels.filter((l) => l.label.startsWith('race-')).map((l) => l.decision_id)).toEqual([
      allowed[0]!.id,
    ]);
    // Stored as answered: the denials are denials in the log too.
    for (const d of denied)
      expect(await rt.getOk(`/v1/decisions/${d.id}`)).toMatchObject({
        effect: 'deny',
        reason: 'session.too_many_labels',
        status: 'denied',
      });
  });

  it("a review awaiting approval adds its policy's labels only once approved", async () => {
    const id = sessionId('review');
    const a = agent('web');
    const pending = await decide({ agent_id: a, action: 'web.fetch', session_id: id });
    expect(pending).toMatchObject({ effect: 'review', status: 'awaiting_approval' });
    expect((await getSession(id)).labels).toEqual([]);
    const reviewer = await rt.keyWith(['reviews:write']);
    await review(rt, reviewer, pending.id, 'approve');
    expect((await getSession(id)).labels).toEqual([
      { label: 'external', added_at: expect.any(String), source: 'policy', decision_id: pending.id },
    ]);
    // A denied review adds none.
    const other = sessionId('review-denied');
    const second = await decide({ agent_id: a, action: 'web.fetch', session_id: other });
    await rt.call(reviewer, {
      method: 'POST',
      url: `/v1/decisions/${second.id}/review`,
      payload: { verdict: 'deny', reviewer: 'alice' },
    });
    expect((await getSession(other)).labels).toEqual([]);
  });

  it('a session ends, labels and all, after AUTHZ_SESSION_IDLE_HOURS without a decision; a decision keeps it alive; the sweep deletes it', async () => {
    const id = sessionId('idle');
    const kept = sessionId('kept');
    const a = agent('idle');
    await addLabels(id, { labels: ['private'], agent_id: a });
    await addLabels(kept, { labels: ['private'], agent_id: a });
    rt.clock.advance(20 * HOUR);
    await decide({ agent_id: a, action: 'orders.read', session_id: kept });
    rt.clock.advance(5 * HOUR);
    // 25 hours without a decision: ended at once for readers, before any sweep.
    expectError(await rt.call(rt.testKey, { method: 'GET', url: sessionPath(id) }), 404, 'session.not_found');
    expect(await decide({ agent_id: a, action: 'email.send', session_id: id })).toMatchObject({
      effect: 'allow',
      metadata: { session_labels: [] },
    });
    // The kept session's last decision was 5 hours ago.
    expect((await getSession(kept)).labels.map((l) => l.label)).toEqual(['private']);
    // That decision began the session again, counting from zero.
    expect(await getSession(id)).toMatchObject({ labels: [], decisions: 1 });
    rt.clock.advance(25 * HOUR);
    const swept = await rt.background.sessions.runOnce();
    expect(swept).toBeGreaterThanOrEqual(2);
    const [{ count }] = await rt.store.sql<
      Array<{ count: string }>
    >`select count(*) from sessions where session_id in (${id}, ${kept})`;
    expect(Number(count)).toBe(0);
    const [{ labels }] = await rt.store.sql<
      Array<{ labels: string }>
    >`select count(*) as labels from session_labels where session_id in (${id}, ${kept})`;
    expect(Number(labels)).toBe(0);
  });
});
