/**
 * The dashboard in a real browser (Debian's chromium driven by playwright-core)
 * against the service listening on 127.0.0.1, on both stores: the page and its
 * headers, sign-in (a bad key refused, the key kept in sessionStorage and never in
 * the URL), the decisions feed and its filters, disabling a policy and seeing the
 * next decision change, the policy's YAML with its diagnostics, revoking and
 * restoring an agent, a 256-character agent id kept within the page, budget usage,
 * and replaying a failed webhook delivery.
 * Chromium: $CHROMIUM_PATH, else /usr/bin/chromium (.ci/run installs it).
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../runtime/auth/api-keys.js';
import { DASHBOARD_CSP } from '../../runtime/routes/dashboard.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';
import { ADMIN_TOKEN, json, startRuntime, type TestRuntime } from './helpers/app.js';
import { launchChromium, POLL } from './helpers/browser.js';
import { postDecision } from '../helpers/kit.js';

let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

describe.each(STORE_KINDS)('dashboard in chromium (%s)', (kind) => {
  let rt: TestRuntime;
  let base: string;
  let page: Page;
  let receiver: Receiver;
  const agent = `dash-bot-${kind}`;

  const decide = async (action = 'orders.read', agentId = agent, amount?: number) => {
    const r = await postDecision(rt, { agent_id: agentId, action, ...(amount === undefined ? {} : { amount }) });
    expect([200, 429], r.body).toContain(r.statusCode);
    return json(r);
  };
  const row = (selector: string) => page.locator(selector);

  beforeAll(async () => {
    rt = await startRuntime(kind);
    receiver = await startReceiver();
    await rt.setPolicies([
      { id: 'pol_dash_read', name: 'read-orders', effect: 'allow', actions: ['orders.read'], priority: 10 },
      {
        id: 'pol_dash_spend',
        name: 'spend',
        effect: 'allow',
        actions: ['payments.charge'],
        priority: 20,
        budget: { unit: 'USD', limit: 100, period: 'daily' },
      },
      {
        id: 'pol_dash_run',
        name: 'per-run',
        effect: 'allow',
        actions: ['llm.call'],
        priority: 20,
        budget: { unit: 'tokens', limit: 5000, period: 'daily', scope: 'session' },
      },
      {
        id: 'pol_dash_user',
        name: 'per-user',
        effect: 'allow',
        actions: ['mail.send'],
        priority: 20,
        budget: { unit: 'calls', limit: 10, period: 'monthly', scope: 'user' },
      },
      { id: 'pol_dash_delete', name: 'no-deletes', effect: 'deny', actions: ['orders.delete'], priority: 5 },
    ] as never);
    base = await rt.app.listen({ host: '127.0.0.1', port: 0 });
    page = await browser.newPage();
    // Fail with the locator's message well before the test's own timeout.
    page.setDefaultTimeout(10_000);
  });
  afterAll(async () => {
    await page?.close();
    await rt?.close();
    await receiver?.close();
  });

  it('serves the page with a strict CSP and no referrer', async () => {
    const r = await fetch(`${base}/dashboard`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/html/);
    expect(r.headers.get('content-security-policy')).toBe(DASHBOARD_CSP);
    expect(r.headers.get('referrer-policy')).toBe('no-referrer');
    const js = await fetch(`${base}/dashboard/app.js`);
    expect(js.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(await js.text()).toContain('sessionStorage');
  });

  it('serves every file of the page (app.js and the modules it imports) with its type, under the same CSP', async () => {
    const dir = join(import.meta.dirname, '..', '..', 'runtime', 'dashboard', 'public');
    const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => /\.(js|css)$/.test(f));
    expect(files).toEqual(expect.arrayContaining(['app.js', 'router.js', 'style.css', join('views', 'agents.js')]));
    for (const file of files) {
      const r = await fetch(`${base}/dashboard/${file.split('\\').join('/')}`);
      expect(r.status, file).toBe(200);
      expect(r.headers.get('content-type'), file).toMatch(file.endsWith('.js') ? /^text\/javascript/ : /^text\/css/);
      expect(r.headers.get('content-security-policy'), file).toBe(DASHBOARD_CSP);
      expect(r.headers.get('x-content-type-options'), file).toBe('nosniff');
    }
    expect((await fetch(`${base}/dashboard/tsconfig.json`)).status).toBe(404);
    expect((await fetch(`${base}/dashboard/views/`)).status).toBe(404);
  });

  it('refuses a wrong key and signs in with the printed key, kept in sessionStorage only', async () => {
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${base}/dashboard`);
    await page.getByLabel('API key').fill(`svc_test_sk_${'x'.repeat(40)}`);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.locator('#sign-in-error').textContent(), POLL).toContain('auth.invalid_key');
    await expect(page.evaluate('sessionStorage.length')).resolves.toBe(0);

    await page.getByLabel('API key').fill(rt.testKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Sections' }).waitFor();
    await expect(page.locator('#environment').textContent()).resolves.toBe('test environment');
    await expect(page.evaluate('Object.values(sessionStorage)')).resolves.toEqual([rt.testKey]);
    await expect(page.evaluate('localStorage.length')).resolves.toBe(0);
    expect(page.url()).not.toContain(rt.testKey);
    expect(errors).toEqual([]);
  });

  it('shows the live decisions feed and filters it by effect, reason and agent', async () => {
    const allow = await decide('orders.read');
    const deny = await decide('orders.delete');
    const other = await decide('orders.read', `${agent}-other`);
    await page.getByRole('link', { name: 'Decisions' }).click();
    // Live: decisions made after the page loaded appear without a reload.
    await row(`tr[data-id="${other.id}"]`).waitFor();
    const later = await decide('orders.read');
    await row(`tr[data-id="${later.id}"]`).waitFor({ timeout: 10_000 });

    const shown = () => page.locator('tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-id')));
    expect(await shown()).toContain(allow.id);
    // The deny row is already on the page: wait for the filtered list itself.
    await page.getByLabel('Effect').selectOption('deny');
    await expect.poll(shown, POLL).toEqual([deny.id]);
    await page.getByLabel('Effect').selectOption('');
    await page.getByLabel('Reason').selectOption('policy.matched');
    await page.getByLabel('Agent', { exact: true }).fill(`${agent}-other`);
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(shown, POLL).toEqual([other.id]);
  });

  it('marks a decision whose shadow outcome differs, and filters the diverged ones', async () => {
    const shadowAgent = `${agent}-shadow`;
    const created = await rt.call(rt.testKey, {
      method: 'POST',
      url: '/v1/policies',
      payload: {
        id: 'pol_dash_shadow',
        state: 'shadow',
        priority: 1,
        effect: 'deny',
        agents: [shadowAgent],
        actions: ['orders.read'],
      },
    });
    expect(created.statusCode, created.body).toBe(201);
    try {
      const diverged = await decide('orders.read', shadowAgent);
      expect(diverged.metadata.shadow).toMatchObject({ effect: 'deny', policy_id: 'pol_dash_shadow' });
      const plain = await decide('orders.read');
      await page.getByRole('link', { name: 'Decisions' }).click();
      // Clear the filters an earlier test left on the view.
      await page.getByLabel('Effect').selectOption('');
      await page.getByLabel('Reason').selectOption('');
      await page.getByLabel('Agent', { exact: true }).fill('');
      await page.getByRole('button', { name: 'Filter' }).click();
      const badge = row(`tr[data-id="${diverged.id}"] .badge.shadow`);
      await badge.waitFor(POLL);
      await expect(badge.textContent()).resolves.toBe('shadow: deny');
      await expect(badge.getAttribute('title')).resolves.toContain('pol_dash_shadow');
      await row(`tr[data-id="${plain.id}"]`).waitFor(POLL);
      await expect(row(`tr[data-id="${plain.id}"] .badge.shadow`).count()).resolves.toBe(0);
      const shown = () => page.locator('tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-id')));
      await page.getByLabel('Shadow diverged').check();
      await expect.poll(shown, POLL).toEqual([diverged.id]);
      await page.getByLabel('Shadow diverged').uncheck();
    } finally {
      await rt.call(rt.testKey, { method: 'DELETE', url: '/v1/policies/pol_dash_shadow' });
    }
  });

  it('disables a policy and the next decision changes; enables it again', async () => {
    expect(await decide()).toMatchObject({ effect: 'allow', reason: 'policy.matched', policy_id: 'pol_dash_read' });
    await page.getByRole('link', { name: 'Policies' }).click();
    await page.getByRole('button', { name: 'Disable read-orders' }).click();
    await row('tr[data-id="pol_dash_read"] .state.disabled').waitFor();
    expect(await decide()).toMatchObject({ effect: 'deny', reason: 'policy.disabled' });
    const events = (await rt.getOk('/v1/events?type=policy.updated')).data;
    expect(events[0].data).toMatchObject({ change: 'disabled', policy: { id: 'pol_dash_read', state: 'disabled' } });

    await page.getByRole('button', { name: 'Enable read-orders' }).click();
    await row('tr[data-id="pol_dash_read"] .state.enabled').waitFor();
    expect(await decide()).toMatchObject({ effect: 'allow', reason: 'policy.matched' });
  });

  it("shows a policy's YAML with its diagnostics and saves an edit", async () => {
    await page.getByRole('button', { name: 'YAML of no-deletes' }).click();
    const area = page.getByLabel('YAML', { exact: true });
    await expect.poll(() => area.inputValue(), POLL).toContain('orders.delete');
    await expect.poll(() => page.locator('#policy-diagnostics').textContent(), POLL).toContain('Valid');

    // A broken action: reported at its line, nothing saved.
    const yaml = await area.inputValue();
    const broken = yaml.replace('orders.delete', 'Orders-Delete');
    await area.fill(broken);
    await page.getByRole('button', { name: 'Save' }).click();
    const line = broken.split('\n').findIndex((l) => l.includes('Orders-Delete')) + 1;
    await expect.poll(() => page.locator('#policy-diagnostics').textContent(), POLL).toContain(`line ${line}`);
    expect((await rt.getOk('/v1/policies/pol_dash_delete')).actions).toEqual(['orders.delete']);

    // A valid edit is saved and used by the next decision: the one after the PUT has answered (the row is
    // readable from the commit on, a moment before the process's compiled set has it and the PUT answers).
    await area.fill(yaml.replace('orders.delete', 'orders.purge'));
    const saved = page.waitForResponse(
      (r) => r.request().method() === 'PUT' && r.url().endsWith('/v1/policies/pol_dash_delete'),
    );
    await page.getByRole('button', { name: 'Save' }).click();
    expect((await saved).status()).toBe(200);
    await expect
      .poll(async () => (await rt.getOk('/v1/policies/pol_dash_delete')).actions, POLL)
      .toEqual(['orders.purge']);
    expect(await decide('orders.purge')).toMatchObject({
      effect: 'deny',
      reason: 'policy.matched',
      policy_id: 'pol_dash_delete',
    });
  });

  it('revokes an agent (its next decision is denied) and restores it', async () => {
    await page.getByRole('link', { name: 'Agents' }).click();
    await page.getByRole('button', { name: `Revoke ${agent}`, exact: true }).click();
    await row(`tr[data-agent="${agent}"] .state.revoked`).waitFor();
    expect(await decide()).toMatchObject({ effect: 'deny', reason: 'agent.revoked' });
    const revoked = (await rt.getOk('/v1/events?type=agent.revoked')).data;
    expect(revoked[0].data.agent_id).toBe(agent);

    await page.getByRole('button', { name: `Restore ${agent}`, exact: true }).click();
    await row(`tr[data-agent="${agent}"] .state.active`).waitFor();
    expect(await decide()).toMatchObject({ effect: 'allow' });
  });

  it('keeps a 256-character agent id within the page: the tables wrap it and Revoke stays on screen', async () => {
    const long = `${agent}-${'x'.repeat(256)}`.slice(0, 256);
    expect(long).toHaveLength(256);
    const made = await decide('orders.read', long);
    const width = page.viewportSize()!.width;
    /** The widths of the view's table and of the page, and the right edge of `selector`. */
    const layout = async (selector: string) => ({
      table: (await page.locator('#view table').boundingBox())!.width,
      page: (await page.evaluate('document.documentElement.scrollWidth')) as number,
      right: await page
        .locator(selector)
        .boundingBox()
        .then((b) => b!.x + b!.width),
    });

    // Leave the agents view first, so that its link draws it anew.
    await page.getByRole('link', { name: 'Decisions' }).click();
    await row(`tr[data-id="${made.id}"]`).waitFor();
    const decisions = await layout(`tr[data-id="${made.id}"] td:last-child`);
    expect(decisions.table).toBeLessThanOrEqual(width);
    expect(decisions.page).toBeLessThanOrEqual(width);
    expect(decisions.right).toBeLessThanOrEqual(width);

    await page.getByRole('link', { name: 'Agents' }).click();
    const revoke = page.getByRole('button', { name: `Revoke ${long}`, exact: true });
    await revoke.waitFor();
    const agents = await layout(`tr[data-agent="${long}"] button`);
    expect(agents.table).toBeLessThanOrEqual(width);
    expect(agents.page).toBeLessThanOrEqual(width);
    expect(agents.right).toBeLessThanOrEqual(width);
    const box = (await revoke.boundingBox())!;
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width).toBeLessThanOrEqual(width);
    // The whole id is in the cell's text and its title, however much of it shows.
    const cell = row(`tr[data-agent="${long}"] th .long`);
    await expect(cell.getAttribute('title')).resolves.toBe(long);
    await expect(cell.textContent()).resolves.toBe(long);

    await revoke.click();
    await row(`tr[data-agent="${long}"] .state.revoked`).waitFor();
    expect(await decide('orders.read', long)).toMatchObject({ effect: 'deny', reason: 'agent.revoked' });
    await page.getByRole('button', { name: `Restore ${long}`, exact: true }).click();
    await row(`tr[data-agent="${long}"] .state.active`).waitFor();
  });

  it('shows budget usage against the limit with the period end', async () => {
    expect(await decide('payments.charge', agent, 30)).toMatchObject({ effect: 'allow' });
    await page.getByRole('link', { name: 'Budgets' }).click();
    const text = page.locator('#view table');
    await expect.poll(() => text.textContent(), POLL).toContain('0.00 consumed + 30.00 held of 100.00\u00a0USD');
    const [budget] = (await rt.getOk(`/v1/budgets?agent_id=${agent}`)).data;
    await expect(text.textContent()).resolves.toContain(
      budget.period_resets_at.replace('T', ' ').replace(/\.\d+Z$/, 'Z'),
    );
  });

  it("shows each budget row's scope and whose spend it counts: the agent, its session, the user", async () => {
    const run = `run-${kind}`;
    const user = `user-${kind}`;
    const llm = await rt.call(rt.testKey, {
      method: 'POST',
      url: '/v1/decisions',
      payload: { agent_id: agent, session_id: run, action: 'llm.call', amounts: { tokens: 1200 } },
    });
    expect(json(llm)).toMatchObject({ effect: 'allow' });
    const mail = await rt.call(rt.testKey, {
      method: 'POST',
      url: '/v1/decisions',
      payload: { agent_id: agent, on_behalf_of: user, action: 'mail.send' },
    });
    expect(json(mail)).toMatchObject({ effect: 'allow' });
    await page.getByRole('link', { name: 'Decisions' }).click();
    await page.getByRole('link', { name: 'Budgets' }).click();
    const table = page.locator('#view table');
    await expect.poll(() => table.textContent(), POLL).toContain('1,200 held of 5,000\u00a0tokens');
    const sessionRow = page.locator('#view tr', { has: page.locator('td[data-key="session"]') });
    await expect(sessionRow.textContent()).resolves.toMatch(new RegExp(`session.*${agent} / session ${run}`));
    const userRow = page.locator('#view tr', { has: page.locator('td[data-key="user"]') });
    await expect(userRow.textContent()).resolves.toContain(`user ${user}`);
    await expect(userRow.textContent()).resolves.toContain('1 consumed + 0 held of 10\u00a0calls');
    await expect(
      page
        .locator('#view tr', { has: page.locator('td[data-key="agent"]') })
        .first()
        .textContent(),
    ).resolves.toContain(agent);
  });

  it('shows deliveries with their retry history and replays a failed one', async () => {
    const created = await rt.call(rt.testKey, {
      method: 'POST',
      url: '/v1/webhooks',
      payload: { url: receiver.url, events: ['agent.revoked'] },
    });
    expect(created.statusCode, created.body).toBe(201);
    const endpoint = json(created);
    receiver.status.code = 500;
    expect((await rt.call(rt.testKey, { method: 'POST', url: `/v1/agents/${agent}/revoke` })).statusCode).toBe(200);
    await rt.services.dispatcher.runOnce();
    expect(receiver.received).toHaveLength(1);
    const [failed] = (await rt.getOk(`/v1/webhooks/${endpoint.id}/deliveries`)).data;
    expect(failed).toMatchObject({ status_code: 500, attempt: 1 });

    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('button', { name: `Deliveries of ${receiver.url}` }).click();
    const failedRow = row(`tr[data-id="${failed.id}"]`);
    await failedRow.waitFor();
    await expect(failedRow.textContent()).resolves.toContain('500');
    await failedRow.getByText('1 attempt').click();
    await expect(failedRow.locator('details li').textContent()).resolves.toMatch(/500.*next/);

    receiver.status.code = 200;
    await page.getByRole('button', { name: `Replay ${failed.id}` }).click();
    await expect.poll(() => page.locator('#status').textContent(), POLL).toMatch(/replayed as whd_/);
    await rt.services.dispatcher.runOnce();
    expect(receiver.received).toHaveLength(2);
    expect(receiver.received[1]!.body.id).toBe(receiver.received[0]!.body.id);
    await page.getByRole('button', { name: 'Refresh' }).click();
    const replay = (await rt.getOk(`/v1/webhooks/${endpoint.id}/deliveries`)).data.find(
      (d: Record<string, unknown>) => d.replay_of === failed.id,
    );
    expect(replay).toMatchObject({ status: 'succeeded', status_code: 200 });
    await row(`tr[data-id="${replay.id}"] .state.succeeded`).waitFor();
    await rt.call(rt.testKey, { method: 'POST', url: `/v1/agents/${agent}/restore` });
  });

  it('signs out when the key is revoked, and on request', async () => {
    const key = await rt.keyWith(['*']);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Sections' }).waitFor();
    const keyId = (
      await rt.store.sql<Array<{ id: string }>>`select id from api_keys where key_hash = ${hashApiKey(key)}`
    )[0]!.id;
    expect(
      (
        await rt.call(null, {
          method: 'DELETE',
          url: `/admin/api-keys/${keyId}`,
          headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        })
      ).statusCode,
    ).toBe(200);
    await page.getByRole('link', { name: 'Agents' }).click();
    await expect.poll(() => page.locator('#sign-in-error').textContent(), POLL).toContain('refused');
    await expect(page.evaluate('sessionStorage.length')).resolves.toBe(0);
  });
});
