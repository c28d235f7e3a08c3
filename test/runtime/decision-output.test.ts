/**
 * POST /v1/decisions/:id/output (issue 48; docs/api.md#post-v1decisionsidoutput-extension), on both stores:
 * what the MCP gateway read in a result is recorded once (the decision's
 * `output`, null before; 409 decision.output_recorded after, the first record
 * kept), findings of one kind, rule and action summed, never a matched text;
 * scope decisions:write; another account's decision 404; bad bodies 400 with
 * the field named.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORE_KINDS } from '../helpers/postgres.js';
import { agent, decide, expectError } from '../helpers/kit.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';

describe.each(STORE_KINDS)('POST /v1/decisions/:id/output (%s store)', (kind) => {
  let rt: TestRuntime;

  const record = (id: string, payload: unknown, key = rt.testKey) =>
    rt.call(key, { method: 'POST', url: `/v1/decisions/${id}/output`, payload: payload as Record<string, unknown> });
  const decision = () => decide(rt, { agent_id: agent('output-bot'), action: 'inbox.read', session_id: 'run-output' });

  beforeAll(async () => {
    rt = await startRuntime(kind);
    await rt.setPolicies([
      { id: 'pol_inbox', effect: 'allow', actions: ['inbox.*'] },
      {
        id: 'pol_no_send_after_untrusted',
        effect: 'deny',
        actions: ['inbox.send'],
        condition: "contains(session.labels, 'untrusted')",
      },
    ]);
  });
  afterAll(() => rt?.close());

  it('records labels and findings once: the decision answers them as output; 409 after, the first kept', async () => {
    const d = await decision();
    expect(d.output).toBeNull();
    expect((await rt.getOk(`/v1/decisions/${d.id}`)).output).toBeNull();

    const r = await record(d.id, {
      labels: ['untrusted', 'pii'],
      findings: [
        { kind: 'pii', rule: 'email', count: 2, action: 'redact' },
        { kind: 'pii', rule: 'email', count: 1, action: 'redact' },
        { kind: 'secret', rule: 'aws-access-key', count: 1, action: 'label' },
        { kind: 'skipped', rule: 'image', count: 1, action: 'skipped' },
      ],
    });
    expect(r.statusCode, r.body).toBe(200);
    const output = {
      labels: ['untrusted', 'pii'],
      findings: [
        { kind: 'pii', rule: 'email', count: 3, action: 'redact' },
        { kind: 'secret', rule: 'aws-access-key', count: 1, action: 'label' },
        { kind: 'skipped', rule: 'image', count: 1, action: 'skipped' },
      ],
      recorded_at: new Date(rt.clock.now()).toISOString(),
    };
    expect(json(r)).toMatchObject({ id: d.id, object: 'decision', output });
    expect((await rt.getOk(`/v1/decisions/${d.id}`)).output).toEqual(output);

    rt.clock.advance(1000);
    expectError(await record(d.id, { labels: ['private'], findings: [] }), 409, 'decision.output_recorded');
    expect((await rt.getOk(`/v1/decisions/${d.id}`)).output).toEqual(output);
  });

  it("the labels join the decision's session (source gateway, the decision named) with the record", async () => {
    const session = `run-labels-${kind}`;
    const d = await decide(rt, { agent_id: agent('output-bot'), action: 'inbox.read', session_id: session });
    expect((await record(d.id, { labels: ['untrusted'], findings: [] })).statusCode).toBe(200);
    const s = await rt.getOk(`/v1/sessions/${session}`);
    expect(s.labels).toEqual([
      { label: 'untrusted', added_at: new Date(rt.clock.now()).toISOString(), source: 'gateway', decision_id: d.id },
    ]);
    // The session's next decision is decided with them.
    const next = await decide(rt, { agent_id: agent('output-bot'), action: 'inbox.send', session_id: session });
    expect(next.effect).toBe('deny');
    expect(next.metadata.session_labels).toEqual(['untrusted']);
  });

  it('a decision without a session records its output; no session is labelled', async () => {
    const d = await decide(rt, { agent_id: agent('output-bot'), action: 'inbox.read' });
    expect((await record(d.id, { labels: ['untrusted'], findings: [] })).statusCode).toBe(200);
    expect((await rt.getOk(`/v1/decisions/${d.id}`)).output.labels).toEqual(['untrusted']);
  });

  it('labels that would take the session past 256: 409 session.too_many_labels, nothing recorded', async () => {
    const session = `run-full-${kind}`;
    const d = await decide(rt, { agent_id: agent('output-bot'), action: 'inbox.read', session_id: session });
    for (let i = 0; i < 8; i++) {
      const r = await rt.call(rt.testKey, {
        method: 'POST',
        url: `/v1/sessions/${session}/labels`,
        payload: { agent_id: 'filler', labels: Array.from({ length: 32 }, (_, j) => `l${i}-${j}`) },
      });
      expect(r.statusCode, r.body).toBe(200);
    }
    expectError(await record(d.id, { labels: ['untrusted'], findings: [] }), 409, 'session.too_many_labels');
    expect((await rt.getOk(`/v1/decisions/${d.id}`)).output).toBeNull();
    // Labels the session holds already add nothing: the record goes through.
    expect((await record(d.id, { labels: ['l0-0'], findings: [] })).statusCode).toBe(200);
  });

  it('an empty record is a record too: the second call is 409', async () => {
    const d = await decision();
    expect((await record(d.id, { labels: [], findings: [] })).statusCode).toBe(200);
    expectError(await record(d.id, { labels: [], findings: [] }), 409, 'decision.output_recorded');
  });

  it('of two records at once, one wins and the other is 409', async () => {
    const d = await decision();
    const answers = await Promise.all([
      record(d.id, { labels: ['a'], findings: [] }),
      record(d.id, { labels: ['b'], findings: [] }),
    ]);
    expect(answers.map((a) => a.statusCode).sort()).toEqual([200, 409]);
    const winner = json(answers.find((a) => a.statusCode === 200)!);
    expect((await rt.getOk(`/v1/decisions/${d.id}`)).output.labels).toEqual(winner.output.labels);
  });

  it('needs decisions:write; another account or an unknown id is 404', async () => {
    const d = await decision();
    const reader = await rt.keyWith(['decisions:read']);
    expectError(await record(d.id, { labels: [], findings: [] }, reader), 403, 'auth.scope_insufficient');
    expectError(await record(d.id, { labels: [], findings: [] }, rt.otherKey), 404, 'decision.not_found');
    expectError(await record('dec_unknown', { labels: [], findings: [] }), 404, 'decision.not_found');
    expect((await rt.getOk(`/v1/decisions/${d.id}`)).output).toBeNull();
  });

  it('bad bodies are 400 naming the field, and record nothing', async () => {
    const d = await decision();
    const bad: Array<[unknown, string]> = [
      [{ findings: [] }, 'validation.missing_field'],
      [{ labels: [] }, 'validation.missing_field'],
      [{ labels: ['Untrusted'], findings: [] }, 'validation.invalid_field'],
      [{ labels: ['x'.repeat(65)], findings: [] }, 'validation.invalid_field'],
      [{ labels: Array.from({ length: 33 }, (_, i) => `l${i}`), findings: [] }, 'validation.invalid_field'],
      [{ labels: ['a', 'a'], findings: [] }, 'validation.invalid_field'],
      [
        { labels: [], findings: [{ kind: 'pii', rule: 'email', count: 0, action: 'label' }] },
        'validation.invalid_field',
      ],
      [
        { labels: [], findings: [{ kind: 'pii', rule: 'email', count: 1, action: 'shred' }] },
        'validation.invalid_field',
      ],
      [
        { labels: [], findings: [{ kind: 'pii', rule: 'email', count: 1, action: 'label', text: 'ada@example.org' }] },
        'validation.invalid_field',
      ],
      [{ labels: [], findings: [], matched: ['ada@example.org'] }, 'validation.invalid_field'],
    ];
    for (const [body, code] of bad) {
      const error = expectError(await record(d.id, body), 400, code);
      expect(error.details?.length, JSON.stringify(body)).toBeGreaterThan(0);
    }
    expect((await rt.getOk(`/v1/decisions/${d.id}`)).output).toBeNull();
  });
});
