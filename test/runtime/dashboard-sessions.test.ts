/**
 * The dashboard's session view (issue 48) in a real browser (Chromium) against
 * the service on 127.0.0.1, on both stores. A session whose labels come from
 * each source (the MCP gateway's output record, a policy's labels, a tool
 * wrapper through the API with a detail) and whose last decision, an e-mail
 * outside, is held for approval: the reviewer (a key with reviews:read,
 * reviews:write, policies:read and decisions:read) sees in the queue the
 * labels that decision was decided with and a link to its session; the
 * session view lists each label with its source, where it came from (the
 * decision's action and tool), its detail and time, and the session's
 * decisions newest first with the labels each was decided with and what its
 * result was labelled; the decision panel shows the session labels and links
 * to the session (from the Decisions view too); a verdict shows in the
 * session's decisions; an unknown session says so.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORE_KINDS } from '../helpers/postgres.js';
import { launchChromium, POLL } from './helpers/browser.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';
import { decide } from '../helpers/kit.js';
import type { JsonObject } from '../helpers/json.js';

let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

describe.each(STORE_KINDS)('dashboard session view in chromium (%s)', (kind) => {
  let rt: TestRuntime;
  let base: string;
  let page: Page;
  let reviewerKey: string;
  const errors: string[] = [];
  const session = 'run-7';
  /** The session's decisions, oldest first: the inbox read, the file read, the held send. */
  let read: JsonObject;
  let file: JsonObject;
  let held: JsonObject;
  const nav = (name: string) => page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name });
  const mcp = (tool: string) => ({ mcp: { server: 'mail', tool, arguments: {} } });

  beforeAll(async () => {
    rt = await startRuntime(kind);
    reviewerKey = await rt.keyWith(['reviews:read', 'reviews:write', 'policies:read', 'decisions:read']);
    await rt.setPolicies([
      { id: 'pol_s_inbox', effect: 'allow', actions: ['mail.read'] },
      { id: 'pol_s_files', effect: 'allow', actions: ['files.read'], labels: ['private'] },
      {
        id: 'pol_s_send_after_both',
        name: 'send-outside-after-both',
        effect: 'review',
        actions: ['mail.send'],
        condition: "contains(session.labels, 'private') && contains(session.labels, 'untrusted')",
        approval: { required: true, timeout_seconds: 900 },
      },
      { id: 'pol_s_send', effect: 'allow', actions: ['mail.send'], priority: 200 },
    ]);
    const agent = 'mail-bot';
    read = await decide(rt, { agent_id: agent, action: 'mail.read', session_id: session, context: mcp('inbox_read') });
    // The gateway records what it read in the inbox's result: untrusted.
    const output = await rt.call(rt.testKey, {
      method: 'POST',
      url: `/v1/decisions/${read.id}/output`,
      payload: { labels: ['untrusted'], findings: [] },
    });
    expect(output.statusCode, output.body).toBe(200);
    rt.clock.advance(1);
    file = await decide(rt, {
      agent_id: agent,
      action: 'files.read',
      resource: 'file:payroll.csv',
      session_id: session,
      context: mcp('files_read'),
    });
    rt.clock.advance(1);
    const added = await rt.call(rt.testKey, {
      method: 'POST',
      url: `/v1/sessions/${session}/labels`,
      payload: { labels: ['pii'], agent_id: agent, detail: 'the contacts tool returned addresses' },
    });
    expect(added.statusCode, added.body).toBe(200);
    rt.clock.advance(1);
    held = await decide(rt, {
      agent_id: agent,
      action: 'mail.send',
      resource: 'mailto:audit@invoices.example',
      session_id: session,
      context: mcp('email_send'),
    });
    expect(held).toMatchObject({
      status: 'awaiting_approval',
      metadata: { session_labels: ['untrusted', 'private', 'pii'] },
    });
    base = await rt.app.listen({ host: '127.0.0.1', port: 0 });
    page = await browser.newPage();
    page.setDefaultTimeout(10_000);
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${base}/dashboard`);
    await page.getByLabel('API key').fill(reviewerKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Sections' }).waitFor();
  });
  afterAll(async () => {
    await page?.close();
    await rt?.close();
  });

  it('the review queue shows the labels a held decision was decided with, and links its session', async () => {
    await nav('Reviews').click();
    const row = page.locator(`#reviews-waiting tr[data-id="${held.id}"]`);
    await row.waitFor();
    await expect(row.locator('.decided-with .badge.label').allTextContents()).resolves.toEqual([
      'untrusted',
      'private',
      'pii',
    ]);
    await row.getByRole('link', { name: `Session ${session}` }).click();
    await page.getByRole('heading', { name: `Session ${session}`, level: 2 }).waitFor();
    expect(new URL(page.url()).hash).toBe(`#sessions/${session}`);
  });

  it('the session view lists each label with its source, the decision it came from, its detail and time; and the decisions', async () => {
    const api = await rt.getOk(`/v1/sessions/${session}`, reviewerKey);
    const labelRows = page.locator('#session-labels tbody tr');
    await expect.poll(() => labelRows.count(), POLL).toBe(3);
    const rows = await labelRows.evaluateAll((trs) =>
      trs.map((tr) => ({
        label: tr.getAttribute('data-label'),
        source: tr.getAttribute('data-source'),
        text: tr.textContent ?? '',
      })),
    );
    // In the order they were added, as the API answers them.
    expect(rows.map((r) => [r.label, r.source])).toEqual(api.labels.map((l: JsonObject) => [l.label, l.source]));
    expect(rows.map((r) => [r.label, r.source])).toEqual([
      ['untrusted', 'gateway'],
      ['private', 'policy'],
      ['pii', 'api'],
    ]);
    expect(rows[0]!.text).toContain('the MCP gateway, reading the result of mail.read (tool inbox_read)');
    expect(rows[1]!.text).toContain('the labels of the policy that allowed files.read (tool files_read)');
    expect(rows[2]!.text).toContain('through the API');
    expect(rows[2]!.text).toContain('the contacts tool returned addresses');
    for (const [i, l] of (api.labels as JsonObject[]).entries())
      expect(rows[i]!.text).toContain((l.added_at as string).replace('T', ' ').replace(/\.\d+Z$/, 'Z'));
    await expect(page.locator('#session-summary').textContent()).resolves.toContain('3 decisions');

    // The session's decisions, newest first, as GET /v1/decisions?session_id= lists them.
    const listed = (await rt.getOk(`/v1/decisions?session_id=${session}`, reviewerKey)).data.map(
      (d: JsonObject) => d.id,
    );
    expect(listed).toEqual([held.id, file.id, read.id]);
    const shown = page.locator('#session-decisions tbody tr');
    await expect
      .poll(() => shown.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-id'))), POLL)
      .toEqual(listed);
    const heldRow = page.locator(`#session-decisions tr[data-id="${held.id}"]`);
    await expect(heldRow.locator('.decided-with .badge').allTextContents()).resolves.toEqual([
      'untrusted',
      'private',
      'pii',
    ]);
    await expect(heldRow.textContent()).resolves.toContain('awaiting_approval');
    await expect(
      page.locator(`#session-decisions tr[data-id="${read.id}"] .result-labels .badge`).allTextContents(),
    ).resolves.toEqual(['untrusted']);

    // A label's decision opens in the panel; its session link leads back here, the panel closed.
    await page
      .locator('#session-labels tr[data-label="untrusted"]')
      .getByRole('button', { name: `Details of ${read.id}` })
      .click();
    const panel = page.getByRole('dialog', { name: 'Decision' });
    await expect.poll(() => panel.textContent(), POLL).toContain(read.id as string);
    await expect(panel.locator('.output-line').textContent()).resolves.toBe('labels untrusted');
    await panel.getByRole('link', { name: `Session ${session}` }).click();
    await panel.waitFor({ state: 'hidden' });
    expect(new URL(page.url()).hash).toBe(`#sessions/${session}`);
  });

  it("the decision panel shows the session's labels it was decided with and links the session, from the Decisions view too", async () => {
    await nav('Decisions').click();
    await page.getByRole('button', { name: `Details of ${held.id}` }).click();
    const panel = page.getByRole('dialog', { name: 'Decision' });
    await expect
      .poll(() => panel.locator('.decided-with .badge').allTextContents(), POLL)
      .toEqual(['untrusted', 'private', 'pii']);
    await panel.getByRole('link', { name: `Session ${session}` }).click();
    await panel.waitFor({ state: 'hidden' });
    await page.getByRole('heading', { name: `Session ${session}`, level: 2 }).waitFor();
  });

  it("a verdict shows in the session's decisions; the Sessions link asks for an id; an unknown one says so", async () => {
    await nav('Reviews').click();
    await page.getByLabel('Your name (reviewer)').fill('Alex');
    await page.getByRole('button', { name: `Deny ${held.id}` }).click();
    await page.locator(`#reviews-waiting tr[data-id="${held.id}"]`).waitFor({ state: 'detached' });
    expect(json(await rt.call(reviewerKey, { method: 'GET', url: `/v1/decisions/${held.id}` }))).toMatchObject({
      status: 'denied',
      reason: 'review.denied',
    });

    await nav('Sessions').click();
    await page.getByLabel('Session id').fill(session);
    await page.getByRole('button', { name: 'Show' }).click();
    await expect
      .poll(() => page.locator(`#session-decisions tr[data-id="${held.id}"] .state`).textContent(), POLL)
      .toBe('denied');
    // A denied review added no label: the session still holds three.
    await expect.poll(() => page.locator('#session-labels tbody tr').count(), POLL).toBe(3);

    await page.goto(`${base}/dashboard#sessions/run-unknown`);
    await expect
      .poll(() => page.locator('#session-summary').textContent(), POLL)
      .toContain('No session run-unknown in this environment');
    expect(errors).toEqual([]);
  });
});
