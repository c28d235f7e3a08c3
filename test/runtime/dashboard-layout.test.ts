/**
 * The dashboard as the people who review see it, in a real browser (Chromium,
 * 1,366 x 900, and each view again at 1,920) against the service on 127.0.0.1, on both stores, with ~50 mixed
 * decisions seeded over half an hour of the service clock (allow, deny, review;
 * reviews an agent waits on and reviews after the fact; amounts in USD, EUR and
 * tokens). Each signed-in view is screenshotted (to $DASHBOARD_SHOTS, else a
 * directory under the system's temp dir; nothing is committed) and its layout
 * facts are checked: no word of a table broken across lines or wider than its
 * column, the chart as wide as its panel with its bars spread, one time format,
 * amounts with their unit, the waiting reviews first with their deadline and each
 * review's own state, policies by priority with their agents, resources and
 * condition, a saved edit's lint (lint.conflict) beside its YAML; a verdict by the deciding key shows review.self_review at its row, in
 * the viewport; a reviewer key (reviews:read, reviews:write) opens on the queue
 * and approves; a session's view (labels of each source, its decisions) fits every width too.
 */
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORE_KINDS } from '../helpers/postgres.js';
import { launchChromium, POLL } from './helpers/browser.js';
import { startRuntime, type TestRuntime } from './helpers/app.js';
import type { JsonObject } from '../helpers/json.js';
import { decide as kitDecide } from '../helpers/kit.js';

const SHOTS = process.env.DASHBOARD_SHOTS ?? join(tmpdir(), 'agent-authz-dashboard-shots');
const VIEWPORT = { width: 1366, height: 900 };
/** A laptop's window and a desktop's: every view fits both without scrolling sideways. */
const WIDTHS = [1366, 1920];
/** The one time format of the dashboard: `2026-11-21 10:05:00Z`. */
const TIMESTAMP = /\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ/g;
const shown = (iso: string) => iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z');

let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
  mkdirSync(SHOTS, { recursive: true });
});
afterAll(async () => {
  await browser?.close();
});

/**
 * Every word (a run without a space, up to the dashboard's WORD_MAX characters) in
 * the view's tables that is broken across lines or sticks out of its cell; each as
 * `word (why)`. Measured in the page with DOM ranges over the text as laid out (a
 * script: this file is not type-checked against the DOM).
 */
const BROKEN_WORDS = `(async () => {
  const { WORD_MAX } = await import('/dashboard/dom.js');
  const problems = [];
  for (const cell of document.querySelectorAll('#view table td, #view table th')) {
    const box = cell.getBoundingClientRect();
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const text = node.textContent ?? '';
      // Not on show: the inside of a closed <details> (a request's context).
      if (node.parentElement.closest('details:not([open]) > :not(summary)')) continue;
      for (const m of text.matchAll(/\\S+/g)) {
        if (m[0].length > WORD_MAX) continue;
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const rects = [...range.getClientRects()].filter((r) => r.width > 0);
        if (rects.length === 0) continue; // not rendered (a closed <details>, a cut line)
        const top = Math.min(...rects.map((r) => r.top));
        if (rects.some((r) => Math.abs(r.top - top) > 2)) problems.push(m[0] + ' (broken across lines)');
        const right = Math.max(...rects.map((r) => r.right));
        const left = Math.min(...rects.map((r) => r.left));
        if (left < box.left - 0.5 || right > box.right + 0.5) problems.push(m[0] + ' (wider than its column: ' + Math.round(right - left) + ' px in ' + Math.round(box.width) + ' px)');
      }
    }
  }
  return problems;
})()`;
const brokenWords = (page: Page) => page.evaluate(BROKEN_WORDS) as Promise<string[]>;

/** The view's tables that do not fit the window (they scroll sideways in their wrapper), by caption or heading. */
const overflowing = (page: Page) =>
  page
    .locator('#view .table-wrap')
    .evaluateAll((wraps) =>
      wraps
        .filter((w) => w.scrollWidth > w.clientWidth + 1)
        .map(
          (w) =>
            `${w.querySelector('caption')?.textContent ?? w.querySelector('table')?.getAttribute('aria-labelledby')}: ${w.scrollWidth} px in ${w.clientWidth} px`,
        ),
    );

/** The view's text with every full timestamp taken out: what is left must hold no other time. */
async function otherTimes(page: Page): Promise<string[]> {
  const text = (await page.locator('#view').textContent())!.replace(TIMESTAMP, '<time>');
  return [...text.matchAll(/\d{1,2}:\d\d(:\d\d)?( ?[AP]M)?|\d{4}-\d\d-\d\dT[\d:.]+Z?/g)].map((m) => m[0]);
}

describe.each(STORE_KINDS)('dashboard layout in chromium (%s)', (kind) => {
  let rt: TestRuntime;
  let base: string;
  let page: Page;
  let reviewerKey: string;
  const errors: string[] = [];
  const nav = (name: string) => page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name });
  /** A screenshot of the whole page, or of the window only (what the user sees at that moment). */
  const shot = (name: string, fullPage = true) =>
    page.screenshot({ path: join(SHOTS, `${kind}-${name}.png`), fullPage });
  /**
   * At each of WIDTHS: the page does not scroll sideways, no table scrolls in its
   * wrapper, every button of the view is inside the window, words whole; a
   * screenshot of each (`NAME-1366.png`, `NAME-1920.png`). Back to VIEWPORT after.
   */
  const fitsEveryWidth = async (name: string) => {
    try {
      for (const width of WIDTHS) {
        const at = `${name} at ${width} px`;
        await page.setViewportSize({ width, height: VIEWPORT.height });
        await expect.poll(() => page.evaluate('window.innerWidth'), POLL).toBe(width);
        expect(
          await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth'),
          at,
        ).toBeLessThanOrEqual(0);
        expect(await overflowing(page), at).toEqual([]);
        const outside = await page
          .locator('#view button')
          .evaluateAll((buttons) =>
            buttons
              .filter(
                (b) =>
                  b.getClientRects().length > 0 &&
                  b.getBoundingClientRect().right > b.ownerDocument.documentElement.clientWidth,
              )
              .map((b) => b.getAttribute('aria-label') ?? b.textContent),
          );
        expect(outside, at).toEqual([]);
        expect(await brokenWords(page), at).toEqual([]);
        await shot(`${name}-${width}`);
      }
    } finally {
      await page.setViewportSize(VIEWPORT);
      await expect.poll(() => page.evaluate('window.innerWidth'), POLL).toBe(VIEWPORT.width);
    }
  };
  /** Decisions the agents made, by kind. */
  const made = { waiting: [] as Array<JsonObject>, after: [] as Array<JsonObject>, all: [] as Array<JsonObject> };

  const decide = async (payload: Record<string, unknown>) => {
    const d = await kitDecide(rt, payload);
    made.all.push(d);
    return d;
  };

  const signIn = async (key: string) => {
    await page.goto(`${base}/dashboard`);
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Sections' }).waitFor();
  };

  beforeAll(async () => {
    rt = await startRuntime(kind);
    reviewerKey = await rt.keyWith(['reviews:read', 'reviews:write']);
    await rt.setPolicies([
      { id: 'pol_lay_reads', name: 'orders-read', effect: 'allow', actions: ['orders.read'], priority: 50 },
      { id: 'pol_lay_deletes', name: 'no-order-deletes', effect: 'deny', actions: ['orders.delete'], priority: 5 },
      {
        id: 'pol_lay_refunds',
        name: 'refunds-approved-first',
        effect: 'review',
        agents: ['support-tier2-*'],
        actions: ['payments.refund'],
        priority: 20,
        approval: { required: true, timeout_seconds: 3600 },
        budget: { unit: 'USD', limit: 5000, period: 'daily' },
      },
      { id: 'pol_lay_refund_log', name: 'refunds-logged', effect: 'allow', actions: ['payments.refund'], priority: 30 },
      // As long as the examples' policies get (examples/support): a long name, several actions, a long condition.
      {
        id: 'pol_support_marketplace_refunds_review',
        name: 'support-marketplace-refunds-review',
        effect: 'review',
        agents: ['support-tier2-*', 'support-escalations-*'],
        actions: ['payments.refund', 'payments.partial_refund', 'orders.cancel'],
        resources: ['order:*'],
        condition:
          "context.order_source != null && startsWith(context.order_source, 'marketplace') && context.customer_email != null",
        priority: 45,
      },
      {
        id: 'pol_lay_payouts',
        name: 'vendor-payouts-reviewed',
        effect: 'review',
        actions: ['payouts.send'],
        resources: ['vendor:*'],
        condition: 'amount <= 5000',
        priority: 25,
        budget: { unit: 'EUR', limit: 20000, period: 'monthly' },
      },
      {
        id: 'pol_lay_charges',
        name: 'charges-daily',
        effect: 'allow',
        actions: ['payments.charge'],
        priority: 40,
        budget: { unit: 'USD', limit: 1000, period: 'daily' },
      },
      {
        id: 'pol_lay_llm',
        name: 'llm-tokens',
        effect: 'allow',
        agents: ['research-*'],
        actions: ['llm.call'],
        priority: 40,
        budget: { unit: 'tokens', limit: 200000, period: 'daily' },
      },
    ] as never);
    base = await rt.app.listen({ host: '127.0.0.1', port: 0 });

    // ~50 decisions over 30 minutes of the service clock.
    for (let minute = 0; minute < 30; minute++) {
      const i = minute;
      if (i % 2 === 0)
        await decide({ agent_id: `catalog-bot-${i % 3}`, action: 'orders.read', resource: `order:${1000 + i}` });
      if (i % 3 === 0)
        await decide({ agent_id: `support-tier2-${i % 4}`, action: 'orders.read', resource: `order:${2000 + i}` });
      if (i % 6 === 0)
        await decide({ agent_id: 'cleanup-bot', action: 'orders.delete', resource: `order:${3000 + i}` });
      if (i % 10 === 1) await decide({ agent_id: 'curious-bot', action: 'inventory.adjust' });
      if (i % 4 === 1)
        made.waiting.push(
          await decide({
            agent_id: `support-tier2-${i % 3}`,
            action: 'payments.refund',
            resource: `order:${4000 + i}`,
            amount: 25 + i * 10.5,
            context: { customer: `cus_${i}`, why: 'damaged parcel' },
          }),
        );
      if (i % 4 === 3) {
        const d = await decide({
          agent_id: 'payables-bot',
          action: 'payouts.send',
          resource: `vendor:acme-logistics-${i}`,
          amount: 1200 + i * 3,
        });
        expect(d).toMatchObject({ effect: 'review', status: 'pending' });
        made.after.push(d);
        // Some the agent confirms or rejects at once: their reviews stay open.
        if (i === 3 || i === 7)
          expect(
            (await rt.call(rt.testKey, { method: 'POST', url: `/v1/decisions/${d.id}/confirm`, payload: {} }))
              .statusCode,
          ).toBe(200);
        if (i === 11)
          expect((await rt.call(rt.testKey, { method: 'POST', url: `/v1/decisions/${d.id}/reject` })).statusCode).toBe(
            200,
          );
      }
      if (i % 6 === 2)
        await decide({
          agent_id: 'checkout-bot',
          action: 'payments.charge',
          resource: `customer:cus_${i}`,
          amount: 49.99 + i,
        });
      if (i % 7 === 3) await decide({ agent_id: 'research-agent-7', action: 'llm.call', amount: 1200 + i * 100 });
      rt.clock.advance(60);
    }
    expect(made.all.length).toBeGreaterThanOrEqual(50);
    expect(made.all.length).toBeLessThanOrEqual(60);
    expect(made.waiting.every((d) => d.status === 'awaiting_approval')).toBe(true);

    page = await browser.newPage({ viewport: VIEWPORT });
    page.setDefaultTimeout(10_000);
    page.on('pageerror', (e) => errors.push(e.message));
  });
  afterAll(async () => {
    await page?.close();
    await rt?.close();
  });

  it('says at sign-in which key reviews', async () => {
    await page.goto(`${base}/dashboard`);
    const help = (await page.locator('#reviewer-key-help').textContent())!.replace(/\s+/g, ' ');
    for (const words of [
      'reviewer key',
      'reviews:read',
      'reviews:write',
      '/admin/accounts/',
      'authz keys create',
      '--scopes reviews:read,reviews:write,policies:read',
      'review.self_review',
    ])
      expect(help).toContain(words);
    await shot('sign-in');
  });

  it('overview: the chart as wide as its panel, bars spread, the budgets heading once, one time format', async () => {
    await signIn(rt.testKey);
    await page.locator('#decision-chart rect[data-effect]').first().waitFor();
    const panel = (await page.locator('#overview-chart').boundingBox())!;
    const chart = (await page.locator('#decision-chart').boundingBox())!;
    const section = (await page.locator('section[aria-labelledby="overview-chart-title"]').boundingBox())!;
    expect(Math.abs(chart.width - panel.width)).toBeLessThanOrEqual(1);
    expect(Math.abs(panel.width - section.width)).toBeLessThanOrEqual(1);
    // The panel fills the page's width (1,400 px less the page's padding and a scroll bar), not ~700 px.
    expect(panel.width).toBeGreaterThan(VIEWPORT.width - 80);
    // Bars spread over the plot: 30 minutes of decisions cover most of its width.
    const xs = await page.locator('#decision-chart rect[data-effect]').evaluateAll((rects) =>
      rects.map((r) => {
        const b = r.getBoundingClientRect();
        return [b.left, b.right];
      }),
    );
    const spread = Math.max(...xs.map((x) => x[1]!)) - Math.min(...xs.map((x) => x[0]!));
    expect(spread / chart.width).toBeGreaterThan(0.8);
    // Drawn to the counts of each minute the API reports.
    const stats = await rt.getOk('/v1/stats/decisions?minutes=60');
    const total = await page
      .locator('#decision-chart rect[data-effect]')
      .evaluateAll((rects) => rects.reduce((n, r) => n + Number(r.getAttribute('data-count')), 0));
    expect(total).toBe(stats.totals.allow + stats.totals.deny + stats.totals.review);

    // The legend speaks of the minutes on the axis: as many, from and to its labels.
    const ticks = await page.locator('#decision-chart text.tick').allTextContents();
    const minutes = await page.locator('#decision-chart').getAttribute('data-minutes');
    const legend = (await page.locator('#overview-chart .legend').textContent())!;
    expect(legend).toMatch(
      new RegExp(
        `^allow \\d+review \\d+deny \\d+ in the ${minutes} minutes shown, ${ticks.at(-2)} to ${ticks.at(-1)}$`,
      ),
    );
    expect(Number(minutes)).toBeLessThan(60);
    await expect.poll(() => page.locator('#overview-budgets').textContent(), POLL).toContain('charges-daily');
    const text = (await page.locator('#view').textContent())!;
    expect(text.split('Budgets nearest their limits')).toHaveLength(2);
    expect(await otherTimes(page)).toEqual([]);
    expect(await brokenWords(page)).toEqual([]);
    expect(await overflowing(page)).toEqual([]);
    await fitsEveryWidth('overview');
  });

  it('decisions: an amount column with the unit, words whole, one time format', async () => {
    await nav('Decisions').click();
    // The newest 50 are on the first page.
    const refund = made.waiting.at(-1)!;
    const row = page.locator(`tr[data-id="${refund.id}"]`);
    await row.waitFor();
    await expect(row.locator('td.amount').textContent()).resolves.toBe(`${refund.amount.toFixed(2)}\u00a0USD`);
    const llm = made.all.filter((d) => d.action === 'llm.call').at(-1)!;
    const llmAmount = (await page.locator(`tr[data-id="${llm.id}"] td.amount`).textContent())!;
    expect(llmAmount).toBe(`${llm.amount.toLocaleString('en')}\u00a0tokens`);
    const headers = await page.locator('#view thead th').allTextContents();
    expect(headers).toContain('Amount');
    expect(await otherTimes(page)).toEqual([]);
    expect(await brokenWords(page)).toEqual([]);
    expect(await overflowing(page)).toEqual([]);
    await fitsEveryWidth('decisions');
  });

  it('policies: sorted by priority, with their agents, resources and condition', async () => {
    await nav('Policies').click();
    await page.locator('tr[data-id="pol_lay_payouts"]').waitFor();
    const headers = await page.locator('#view thead th').allTextContents();
    for (const column of ['Priority', 'Agents', 'Actions', 'Resources', 'Condition']) expect(headers).toContain(column);
    const priorities = await page.locator('#view tbody tr td:first-child').allTextContents();
    expect(priorities.map(Number)).toEqual([5, 20, 25, 30, 40, 40, 45, 50]);
    const payouts = (await page.locator('tr[data-id="pol_lay_payouts"]').textContent())!;
    for (const part of ['vendor:*', 'amount <= 5000', 'any agent', 'payouts.send']) expect(payouts).toContain(part);
    await expect(page.locator('tr[data-id="pol_lay_refunds"]').textContent()).resolves.toContain('support-tier2-*');
    expect(await brokenWords(page)).toEqual([]);
    expect(await overflowing(page)).toEqual([]);
    await fitsEveryWidth('policies');
  });

  it('policies: a saved edit that conflicts with another policy shows its lint (lint.conflict) beside the YAML', async () => {
    await page.getByRole('button', { name: 'YAML of no-order-deletes' }).click();
    const area = page.getByLabel('YAML', { exact: true });
    await expect.poll(() => area.inputValue(), POLL).toContain('orders.delete');
    // The editor opens right under the row clicked (the first of eight), not below all rows.
    const next = await page
      .locator('tr[data-id="pol_lay_deletes"]')
      .evaluate((tr) => tr.nextElementSibling?.querySelector('#policy-yaml') !== null);
    expect(next).toBe(true);
    const rowBox = (await page.locator('tr[data-id="pol_lay_deletes"]').boundingBox())!;
    const editorBox = (await page.locator('tr.editor').boundingBox())!;
    expect(Math.abs(editorBox.y - (rowBox.y + rowBox.height))).toBeLessThanOrEqual(1);
    expect((await area.boundingBox())!.y).toBeLessThan(editorBox.y + 100);
    await shot('policies-editor-1366', false);
    const original = await area.inputValue();
    // The deny of deletes also denies reads, at the priority of the allow of reads (50): a conflict, decided by deny > allow.
    const conflicting = original
      .replace(/^priority: 5$/m, 'priority: 50')
      .replace(/^ {2}- orders\.delete$/m, '  - orders.delete\n  - orders.read');
    expect(conflicting).not.toBe(original);
    const save = async (yaml: string) => {
      await area.fill(yaml);
      const saved = page.waitForResponse(
        (r) => r.request().method() === 'PUT' && r.url().endsWith('/v1/policies/pol_lay_deletes'),
      );
      await page.getByRole('button', { name: 'Save' }).click();
      expect((await saved).status()).toBe(200);
    };
    await save(conflicting);
    const diagnostics = page.locator('#policy-diagnostics');
    await expect
      .poll(() => diagnostics.textContent(), POLL)
      .toContain('warning: lint.conflict: policies pol_lay_deletes and pol_lay_reads have the same priority 50');
    await expect(diagnostics.locator('li.warning').count()).resolves.toBe(1);
    await diagnostics.scrollIntoViewIfNeeded();
    await shot('policies-lint', false);
    // Back as it was: no lint.
    await save(original);
    await expect.poll(() => diagnostics.textContent(), POLL).toContain('No problems found.');
    expect((await rt.getOk('/v1/policies/pol_lay_deletes')).priority).toBe(5);
  });

  it('budgets, agents and webhooks: words whole, one time format', async () => {
    for (const view of ['Budgets', 'Agents', 'Webhooks']) {
      await nav(view).click();
      await page.getByRole('heading', { name: view, level: 2 }).waitFor();
      await page.locator('#view table, #view p').first().waitFor();
      expect(await otherTimes(page), view).toEqual([]);
      expect(await brokenWords(page), view).toEqual([]);
      expect(await overflowing(page), view).toEqual([]);
      await fitsEveryWidth(view.toLowerCase());
    }
  });

  it('reviews: waiting ones first with their deadline, then after the fact; units; the review state; words whole', async () => {
    await nav('Reviews').click();
    const rows = page.locator('#view tbody tr');
    await expect.poll(() => rows.count(), POLL).toBe(made.waiting.length + made.after.length);
    const order = await rows.evaluateAll((trs) =>
      trs.map((tr) => ({
        id: tr.getAttribute('data-id'),
        kind: tr.getAttribute('data-kind'),
        state: tr.getAttribute('data-review-state'),
        first: tr.querySelector('td')?.textContent,
      })),
    );
    const waitingById = [...made.waiting].sort((a, b) => a.approval_expires_at.localeCompare(b.approval_expires_at));
    expect(order.slice(0, made.waiting.length).map((r) => r.id)).toEqual(waitingById.map((d) => d.id));
    expect(order.slice(0, made.waiting.length).map((r) => r.first)).toEqual(
      waitingById.map((d) => shown(d.approval_expires_at)),
    );
    expect(order.slice(made.waiting.length).map((r) => r.id)).toEqual(made.after.map((d) => d.id));
    expect(order.map((r) => r.kind)).toEqual([
      ...made.waiting.map(() => 'approval'),
      ...made.after.map(() => 'after-the-fact'),
    ]);
    expect(new Set(order.map((r) => r.state))).toEqual(new Set(['open']));
    // The decision's own status (confirmed, rejected, pending) is not the review's.
    const text = (await page.locator('#view').textContent())!;
    for (const status of ['confirmed', 'rejected', 'pending']) expect(text).not.toContain(status);
    await expect(page.locator(`tr[data-id="${made.waiting[0]!.id}"] td.amount`).textContent()).resolves.toBe(
      `${made.waiting[0]!.amount.toFixed(2)}\u00a0USD`,
    );
    await expect(page.locator(`tr[data-id="${made.after[0]!.id}"] td.amount`).textContent()).resolves.toBe(
      `${made.after[0]!.amount.toLocaleString('en', { minimumFractionDigits: 2 })}\u00a0EUR`,
    );
    // Two matched policies: the comma stays with the first name.
    const policies = page.locator(`tr[data-id="${made.waiting[0]!.id}"] .policies`);
    await expect(policies.textContent()).resolves.toBe('refunds-approved-first, refunds-logged');
    const lines = await policies.locator('.nowrap').evaluateAll((spans) => spans.map((s) => s.textContent));
    expect(lines).toEqual(['refunds-approved-first,', 'refunds-logged']);
    expect(await otherTimes(page)).toEqual([]);
    expect(await brokenWords(page)).toEqual([]);
    // A request's context, opened, keeps its words whole too.
    const context = page.locator(`tr[data-id="${made.waiting[0]!.id}"] details`);
    await context.getByText('context').click();
    await expect(context.locator('pre').textContent()).resolves.toContain('damaged parcel');
    expect(await brokenWords(page)).toEqual([]);
    await shot('reviews-context');
    await context.getByText('context').click();
    expect(await overflowing(page)).toEqual([]);
    await fitsEveryWidth('reviews');
    // On a smaller laptop's window (1,024 px) the columns still fit, their words whole.
    await page.setViewportSize({ width: 1024, height: 768 });
    try {
      await expect.poll(() => page.evaluate('window.innerWidth'), POLL).toBe(1024);
      expect(await brokenWords(page)).toEqual([]);
      expect(await overflowing(page)).toEqual([]);
      await shot('reviews-1024');
    } finally {
      await page.setViewportSize(VIEWPORT);
    }
  });

  it('shows review.self_review at the row, in the viewport, when the deciding key approves', async () => {
    await page.getByLabel('Your name (reviewer)').fill('Dana Reviewer');
    // The last waiting review, scrolled to the bottom of the window.
    const target = [...made.waiting].sort((a, b) => b.approval_expires_at.localeCompare(a.approval_expires_at))[0]!;
    const row = page.locator(`tr[data-id="${target.id}"]`);
    await row.evaluate((tr) => tr.scrollIntoView({ block: 'end' }));
    await page.getByRole('button', { name: `Approve ${target.id}` }).click();
    const message = row.locator('.row-error');
    await expect.poll(() => message.textContent(), POLL).toContain('review.self_review');
    await expect(message.textContent()).resolves.toContain('reviewer key');
    const box = (await message.boundingBox())!;
    expect(box.y).toBeGreaterThanOrEqual(0);
    expect(box.y + box.height).toBeLessThanOrEqual(VIEWPORT.height);
    expect((await rt.getOk(`/v1/decisions/${target.id}`)).status).toBe('awaiting_approval');
    await shot('reviews-self-review', false);
  });

  it('a reviewer key opens on the queue and approves; approved reviews show their own state', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(reviewerKey);
    await page.getByRole('heading', { name: 'Reviews', level: 2 }).waitFor();
    expect(new URL(page.url()).hash).toBe('#reviews');
    const target = made.waiting[0]!;
    await page.getByRole('button', { name: `Approve ${target.id}` }).waitFor();
    await page.getByLabel('Your name (reviewer)').fill('Dana Reviewer');
    await page.getByRole('button', { name: `Approve ${target.id}` }).click();
    await page.locator(`tr[data-id="${target.id}"]`).waitFor({ state: 'detached' });
    expect(await rt.getOk(`/v1/decisions/${target.id}`)).toMatchObject({
      status: 'pending',
      review: { status: 'approved', reviewer: 'Dana Reviewer' },
    });
    await shot('reviews-reviewer-key');

    await page.getByLabel('Show').selectOption('approved');
    const row = page.locator(`tr[data-id="${target.id}"]`);
    await row.waitFor();
    await expect(row.getAttribute('data-review-state')).resolves.toBe('approved');
    await expect(row.textContent()).resolves.toContain('approved by Dana Reviewer');
    await expect(row.textContent()).resolves.toContain('the agent waited for it');
    // This key may not read policies: the unit is unknown, and said so rather than left out.
    await expect(row.locator('td.amount').textContent()).resolves.toBe(
      `${target.amount.toLocaleString('en')} (unit unknown)`,
    );
    expect(await brokenWords(page)).toEqual([]);
    expect(await overflowing(page)).toEqual([]);
    await shot('reviews-approved');
    expect(errors).toEqual([]);
  });
  it('session: its labels (each source) and decisions, words whole, one time format, at every width', async () => {
    const session = 'run-layout-0042';
    const agent = 'support-tier2-mailroom-assistant';
    const policies = await rt.getOk('/v1/policies?limit=100');
    expect(policies.data.length).toBeGreaterThan(0);
    // The session's decisions (orders.read is allowed to every agent here), the gateway's record of one result, a wrapper's label.
    const first = await decide({
      agent_id: agent,
      action: 'orders.read',
      resource: 'order:1001',
      session_id: session,
      context: { mcp: { server: 'orders', tool: 'lookup_order', arguments: {} } },
    });
    const recorded = await rt.call(rt.testKey, {
      method: 'POST',
      url: `/v1/decisions/${first.id}/output`,
      payload: { labels: ['untrusted', 'pii'], findings: [{ kind: 'pii', rule: 'email', count: 2, action: 'label' }] },
    });
    expect(recorded.statusCode, recorded.body).toBe(200);
    const labelled = await rt.call(rt.testKey, {
      method: 'POST',
      url: `/v1/sessions/${session}/labels`,
      payload: {
        labels: ['private'],
        agent_id: agent,
        detail: 'the customer-records wrapper returned a customer file with a postal address and a date of birth',
      },
    });
    expect(labelled.statusCode, labelled.body).toBe(200);
    await decide({ agent_id: agent, action: 'orders.delete', resource: 'order:1001', session_id: session });
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(rt.testKey);
    await page.goto(`${base}/dashboard#sessions/${session}`);
    await expect.poll(() => page.locator('#session-labels tbody tr').count(), POLL).toBe(3);
    await expect.poll(() => page.locator('#session-decisions tbody tr').count(), POLL).toBe(2);
    expect(await otherTimes(page)).toEqual([]);
    expect(await brokenWords(page)).toEqual([]);
    expect(await overflowing(page)).toEqual([]);
    await fitsEveryWidth('session');
    expect(errors).toEqual([]);
  });
});
