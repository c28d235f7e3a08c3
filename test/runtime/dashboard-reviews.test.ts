/**
 * The dashboard's review queue, overview and decision panel in a real browser
 * (Chromium) against the service on 127.0.0.1, on both stores: it opens on the
 * overview, whose chart draws the per-minute counts GET /v1/stats/decisions
 * reports; the nav counts the open reviews; the queue shows what the agent
 * asked (agent, action, resource, amount, matched policies by name, context);
 * a reviewer approves one and denies another with notes, and agents waiting
 * with GET /v1/decisions/:id?wait= (requests the test holds over HTTP) get each
 * answer; the reviewer's name is kept for the session; a decision the
 * dashboard's own key made cannot be approved there; a chat notification's
 * link opens its review with the button focused; decisions open into a
 * panel (warnings, matched policies, the history values read, review, expiry) from the lists; policies
 * show by name with their id on hover.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reviewLink } from '../../examples/review-receiver/message.js';
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

describe.each(STORE_KINDS)('dashboard reviews in chromium (%s)', (kind) => {
  let rt: TestRuntime;
  let base: string;
  let page: Page;
  /** The dashboard signs in with this key; the agents decide with rt.testKey. */
  let dashboardKey: string;
  const errors: string[] = [];
  /** A link of the navigation (the overview has an "All reviews" link too). */
  const nav = (name: string) => page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name });

  /** An agent waiting for its review over real HTTP, as an agent would. */
  const waitFor = (id: string) =>
    fetch(`${base}/v1/decisions/${id}?wait=60`, { headers: { authorization: `Bearer ${rt.testKey}` } }).then(
      async (r) => ({
        status: r.status,
        body: (await r.json()) as JsonObject,
      }),
    );

  beforeAll(async () => {
    rt = await startRuntime(kind);
    dashboardKey = await rt.keyWith(['*']);
    await rt.setPolicies([
      { id: 'pol_dash_reads', name: 'read-orders', effect: 'allow', actions: ['orders.read'], priority: 10 },
      { id: 'pol_dash_deletes', name: 'no-deletes', effect: 'deny', actions: ['orders.delete'], priority: 5 },
      {
        id: 'pol_dash_refunds',
        name: 'refunds-approved-first',
        effect: 'review',
        actions: ['payments.refund'],
        priority: 20,
        approval: { required: true, timeout_seconds: 600 },
      },
      // Reads history (docs/history.md): the panel lists the value it read.
      {
        id: 'pol_dash_refund_log',
        name: 'refunds-logged',
        effect: 'allow',
        actions: ['payments.refund'],
        priority: 30,
        condition: "history.count('payments.refund', '1d', 'agent') < 100",
      },
    ]);
    base = await rt.app.listen({ host: '127.0.0.1', port: 0 });
    page = await browser.newPage();
    page.setDefaultTimeout(10_000);
    page.on('pageerror', (e) => errors.push(e.message));
  });
  afterAll(async () => {
    await page?.close();
    await rt?.close();
  });

  it('opens on the overview: its chart draws the counts the API reports, and the nav counts open reviews', async () => {
    for (let i = 0; i < 3; i++) await decide(rt, { agent_id: 'chart-bot', action: 'orders.read' });
    await decide(rt, { agent_id: 'chart-bot', action: 'orders.delete' });
    rt.clock.advance(60);
    await decide(rt, { agent_id: 'chart-bot', action: 'orders.delete' });
    await decide(rt, { agent_id: 'refund-bot', action: 'payments.refund', resource: 'order:1', amount: 10 });

    await page.goto(`${base}/dashboard`);
    await page.getByLabel('API key').fill(dashboardKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Overview', level: 2 }).waitFor();
    await page.locator('#decision-chart').waitFor();

    const api = await rt.getOk('/v1/stats/decisions?minutes=60', dashboardKey);
    const expected = api.per_minute.flatMap((m: JsonObject) =>
      (['allow', 'review', 'deny'] as const).filter((e) => m[e] > 0).map((e) => `${m.minute} ${e} ${m[e]}`),
    );
    expect(expected).toHaveLength(4);
    const drawn = await page.locator('#decision-chart rect[data-effect]').evaluateAll((rects) =>
      rects.map((r) => ({
        key: `${r.getAttribute('data-minute')} ${r.getAttribute('data-effect')} ${r.getAttribute('data-count')}`,
        height: Number(r.getAttribute('height')),
      })),
    );
    expect(drawn.map((d) => d.key).sort()).toEqual([...expected].sort());
    // Heights are proportional to the counts: 3 allow is three times 1 deny.
    const height = (key: string) => drawn.find((d) => d.key.endsWith(key))!.height;
    expect(height('allow 3') / height('deny 1')).toBeCloseTo(3, 5);
    await expect(page.locator('#decision-chart').getAttribute('aria-label')).resolves.toContain(
      '3 allow, 1 review, 2 deny',
    );
    await expect.poll(() => page.locator('#overview-denied').textContent(), POLL).toContain('chart-bot');
    await expect.poll(() => page.locator('#overview-reviews').textContent(), POLL).toContain('refund-bot');
    await expect.poll(() => page.locator('#review-count').textContent(), POLL).toBe('1');
    await expect(page.locator('#review-count').isVisible()).resolves.toBe(true);
  });

  it('approves one and denies another; the waiting agents get each answer', async () => {
    const first = await decide(rt, {
      agent_id: 'refund-bot-1',
      action: 'payments.refund',
      resource: 'order:1001',
      amount: 25,
      context: { customer: 'cus_77', why: 'damaged parcel' },
    });
    const second = await decide(rt, {
      agent_id: 'refund-bot-2',
      action: 'payments.refund',
      resource: 'order:1002',
      amount: 900,
    });
    expect([first.status, second.status]).toEqual(['awaiting_approval', 'awaiting_approval']);
    const waiting = [waitFor(first.id), waitFor(second.id)];
    await expect.poll(() => rt.services.reviewWaiters.size, POLL).toBe(2);

    await nav('Reviews').click();
    const firstRow = page.locator(`tr[data-id="${first.id}"]`);
    await firstRow.waitFor();
    const text = await firstRow.textContent();
    for (const shown of [
      'refund-bot-1',
      'payments.refund',
      'order:1001',
      '25',
      'refunds-approved-first',
      'refunds-logged',
    ])
      expect(text).toContain(shown);
    // Matched policies by name, the id on hover.
    await expect(firstRow.locator('[data-policy-id="pol_dash_refunds"]').getAttribute('title')).resolves.toBe(
      'pol_dash_refunds',
    );
    await firstRow.getByText('context').click();
    await expect(firstRow.locator('pre.context').textContent()).resolves.toContain('damaged parcel');
    await expect.poll(() => page.locator('#review-count').textContent(), POLL).toBe('3');

    // Without a reviewer's name nothing is sent.
    await page.getByRole('button', { name: `Approve ${first.id}` }).click();
    await expect.poll(() => firstRow.locator('.row-error').textContent(), POLL).toContain('your name');
    expect(rt.services.reviewWaiters.size).toBe(2);

    await page.getByLabel('Your name (reviewer)').fill('Dana Reviewer');
    await page.getByLabel(`Note for ${first.id}`).fill('customer called, verified');
    await page.getByRole('button', { name: `Approve ${first.id}` }).click();
    const [approved] = await Promise.all([waiting[0]!]);
    expect(approved.status).toBe(200);
    expect(approved.body).toMatchObject({
      id: first.id,
      status: 'pending',
      review: { status: 'approved', reviewer: 'Dana Reviewer', note: 'customer called, verified' },
    });
    expect(rt.services.reviewWaiters.size).toBe(1);
    await firstRow.waitFor({ state: 'detached' });

    await page.getByLabel(`Note for ${second.id}`).fill('too large for a refund');
    await page.getByRole('button', { name: `Deny ${second.id}` }).click();
    const denied = await waiting[1]!;
    expect(denied.body).toMatchObject({
      id: second.id,
      effect: 'deny',
      reason: 'review.denied',
      status: 'denied',
      review: { status: 'denied', reviewer: 'Dana Reviewer', note: 'too large for a refund' },
    });
    await expect.poll(() => page.locator('#review-count').textContent(), POLL).toBe('1');

    // The approved agent gets its permit.
    const permit = await rt.call(rt.testKey, { method: 'POST', url: `/v1/decisions/${first.id}/permit` });
    expect(json(permit).permit_token).toMatch(/^eyJ/);

    // Approved and denied reviews are listed, with who and why.
    await page.getByLabel('Show').selectOption('denied');
    await expect
      .poll(() => page.locator(`tr[data-id="${second.id}"]`).textContent(), POLL)
      .toContain('denied by Dana Reviewer');
    // The reviewer's name is kept for the session.
    await nav('Overview').click();
    await nav('Reviews').click();
    await expect(page.getByLabel('Your name (reviewer)').inputValue()).resolves.toBe('Dana Reviewer');
  });

  it("refuses to let the dashboard's own key approve a decision it made", async () => {
    const own = await decide(rt, { agent_id: 'self-bot', action: 'payments.refund', amount: 5 }, dashboardKey);
    await nav('Overview').click();
    await nav('Reviews').click();
    await page.getByRole('button', { name: `Approve ${own.id}` }).click();
    // At the row, not on the status line at the top of the page.
    await expect
      .poll(() => page.locator(`tr[data-id="${own.id}"] .row-error`).textContent(), POLL)
      .toContain('review.self_review');
    await expect(page.locator(`tr[data-id="${own.id}"] .row-error`).isVisible()).resolves.toBe(true);
    expect((await rt.getOk(`/v1/decisions/${own.id}`)).status).toBe('awaiting_approval');
  });

  it("a chat notification's link opens the review with its button focused, and sends nothing", async () => {
    const d = await decide(rt, { agent_id: 'link-bot', action: 'payments.refund', amount: 3 });
    await page.goto(reviewLink(`${base}/dashboard`, d.id, 'deny'));
    await expect
      .poll(() => page.evaluate("document.activeElement?.getAttribute('aria-label')"), POLL)
      .toBe(`Deny ${d.id}`);
    await expect(page.locator(`tr[data-id="${d.id}"]`).getAttribute('class')).resolves.toContain('target');
    expect((await rt.getOk(`/v1/decisions/${d.id}`)).status).toBe('awaiting_approval');
    await page.goto(reviewLink(`${base}/dashboard`, d.id, 'approve'));
    await expect
      .poll(() => page.evaluate("document.activeElement?.getAttribute('aria-label')"), POLL)
      .toBe(`Approve ${d.id}`);
  });

  it('opens a decision into a panel from the lists: warnings, matched policies, history read, review, expiry', async () => {
    const [approved] = (await rt.getOk('/v1/reviews?status=approved')).data;
    await nav('Decisions').click();
    const row = page.locator(`tr[data-id="${approved.id}"]`);
    await row.waitFor();
    // The deciding policy by name, its id on hover.
    await expect(row.locator('.policy').textContent()).resolves.toBe('refunds-approved-first');
    await expect(row.locator('.policy').getAttribute('title')).resolves.toBe('pol_dash_refunds');
    await page.getByRole('button', { name: `Details of ${approved.id}` }).click();
    const panel = page.getByRole('dialog', { name: 'Decision' });
    await panel.waitFor();
    await expect.poll(() => panel.textContent(), POLL).toContain('approved by Dana Reviewer');
    const shown = (await panel.textContent())!;
    // Two policies of different effects matched: a conflict warning.
    for (const text of [
      'policy.conflict',
      'refunds-approved-first, refunds-logged',
      'customer called, verified',
      approved.expires_at.replace('T', ' ').replace(/\.\d+Z$/, 'Z'),
      'Approval deadline',
      'History read',
      "history.count('payments.refund', '1d', 'agent') = ",
    ]) {
      expect(shown).toContain(text);
    }
    await panel.getByRole('button', { name: 'Close' }).click();
    await panel.waitFor({ state: 'hidden' });

    // From the overview's open reviews too.
    await nav('Overview').click();
    const [open] = (await rt.getOk('/v1/reviews?status=open', dashboardKey)).data;
    await page.getByRole('button', { name: `Details of ${open.id}` }).click();
    await expect.poll(() => panel.textContent(), POLL).toContain('open: waiting for a reviewer');
    await panel.getByRole('button', { name: 'Close' }).click();
    expect(errors).toEqual([]);
  });
});
