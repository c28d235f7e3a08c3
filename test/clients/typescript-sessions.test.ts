/**
 * `addLabels` and `getSession` of the TypeScript client (agent-authz/client)
 * against a real service on 127.0.0.1, both stores: the labels a tool reports
 * decide the session's next decision, the session answers with each label's
 * source, the client's `sessionId` is the default, and the errors are
 * `AuthzError`s with the service's codes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthzClient, AuthzError, type Session } from '../../clients/typescript/index.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { startRuntime, type TestRuntime } from '../runtime/helpers/app.js';
import { agent } from '../helpers/kit.js';

const runId = () => `run-${Math.random().toString(36).slice(2, 10)}`;

describe.each(STORE_KINDS)('TypeScript client: session labels (%s)', (kind) => {
  let rt: TestRuntime;
  let baseUrl: string;

  beforeAll(async () => {
    rt = await startRuntime(kind);
    await rt.setPolicies([
      { id: 'pol_files_read', effect: 'allow', actions: ['files.read'], labels: ['private'] },
      { id: 'pol_send', effect: 'allow', actions: ['email.send'] },
      {
        id: 'pol_send_untrusted',
        effect: 'deny',
        priority: 10,
        actions: ['email.send'],
        condition: "contains(session.labels, 'untrusted')",
      },
    ]);
    baseUrl = await rt.app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(() => rt.close());

  it('addLabels decides the next decision; getSession shows the labels with their sources', async () => {
    const bot = agent('ts-labels');
    const run = runId();
    const authz = new AuthzClient({ baseUrl, apiKey: rt.testKey, sessionId: run });
    expect((await authz.decide({ agent_id: bot, action: 'email.send' })).effect).toBe('allow');
    const read = await authz.decide({ agent_id: bot, action: 'files.read' });
    const session: Session = await authz.addLabels({
      labels: ['untrusted'],
      agent_id: bot,
      detail: 'fetched a web page',
    });
    expect(session).toMatchObject({ object: 'session', id: run, decisions: 2, last_decision_at: read.evaluated_at });
    expect(session.labels.map((l) => [l.label, l.source, l.decision_id, l.detail])).toEqual([
      ['private', 'policy', read.id, undefined],
      ['untrusted', 'api', undefined, 'fetched a web page'],
    ]);
    const denied = await authz.decide({ agent_id: bot, action: 'email.send' });
    expect(denied).toMatchObject({
      effect: 'deny',
      policy_id: 'pol_send_untrusted',
      metadata: { session_labels: ['private', 'untrusted'] },
    });
    expect(await authz.getSession()).toMatchObject({ id: run, decisions: 3, last_decision_at: denied.evaluated_at });
    // Another run: its own session, named per call.
    const other = runId();
    await authz.addLabels({ labels: ['pii'], agent_id: bot, session_id: other });
    expect((await authz.getSession(other)).labels.map((l) => l.label)).toEqual(['pii']);
    expect((await authz.decide({ agent_id: bot, action: 'email.send', session_id: other })).effect).toBe('allow');
  });

  it('errors: session.not_found, validation.too_many_labels, a bad label, session.too_many_labels; no session id', async () => {
    const authz = new AuthzClient({ baseUrl, apiKey: rt.testKey, retries: 0 });
    const codeOf = async (call: Promise<unknown>) => {
      const error = await call.then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(AuthzError);
      return [(error as AuthzError).code, (error as AuthzError).status];
    };
    expect(await codeOf(authz.getSession(runId()))).toEqual(['session.not_found', 404]);
    const many = Array.from({ length: 33 }, (_, i) => `l${i}`);
    expect(await codeOf(authz.addLabels({ labels: many, agent_id: 'bot', session_id: runId() }))).toEqual([
      'validation.too_many_labels',
      400,
    ]);
    expect(await codeOf(authz.addLabels({ labels: ['Bad Label'], agent_id: 'bot', session_id: runId() }))).toEqual([
      'validation.invalid_field',
      400,
    ]);
    const full = runId();
    for (let i = 0; i < 8; i++)
      await authz.addLabels({
        labels: Array.from({ length: 32 }, (_, j) => `f${i * 32 + j}`),
        agent_id: 'bot',
        session_id: full,
      });
    expect(await codeOf(authz.addLabels({ labels: ['one-more'], agent_id: 'bot', session_id: full }))).toEqual([
      'session.too_many_labels',
      409,
    ]);
    await expect(authz.getSession()).rejects.toThrow(TypeError);
  });
});
