/**
 * Crash recovery (issue 8): a real `authz serve` child process (bin/authz.js ->
 * dist/runtime/serve.js) on PostgreSQL, loaded concurrently with decisions
 * (a USD budget, a calls budget, plain allows, denies), confirms of allowed
 * decisions and webhook-triggering changes (policy updates, agent revokes), is
 * killed with SIGKILL in the middle of the load and restarted on the same
 * database and port while the load goes on. Then:
 *
 * - every decision answered 200 (before the kill or after the restart) reads
 *   back with GET /v1/decisions/:id with the same effect, agent and amount, and
 *   has its `decision.<effect>` event;
 * - every confirm answered 200 is still confirmed, with its amount, and the
 *   budget's `consumed` is exactly the confirmed decisions in the store (so it
 *   counts every confirm that got a 200);
 * - held + consumed never exceed a budget's limit; `held` covers every pending
 *   decision's hold; a calls budget counts every allow answered;
 * - every event in GET /v1/events reaches the receiver (distinct envelope ids,
 *   signatures verified, answered 200) within a bounded wait, including the
 *   deliveries in flight at the kill (the receiver holds its answers just
 *   before it, so there are some; their connections are then closed
 *   unanswered): the restarted process sends them again, as a later attempt,
 *   once the dead process's claims expire. AUTHZ_WEBHOOK_LEASE_SECONDS is 2
 *   here, so that takes seconds instead of 60.
 *
 * No wall-clock assertion: the kill happens after counts of answers, waits are
 * bounded polls with generous deadlines.
 */
import { createServer, type Server as HttpServer, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhookSignature } from '../../webhook-receiver/index.js';
import { confirmLoad } from '../helpers/confirm-load.js';
import { createTestDatabase } from '../helpers/postgres.js';
import {
  ensureBuilt,
  freePort,
  HOST,
  request,
  startServeProcess,
  stopServer,
  type Reply,
  type ServeProcess,
} from '../helpers/server-process.js';
import type { JsonObject } from '../helpers/json.js';

const ADMIN_TOKEN = 'admin-token-for-crash-recovery-0123456789';
const LEASE_SECONDS = 2;
const USD_LIMIT = 300;
const CALLS_LIMIT = 40;
/** Answers (decisions, confirms, changes) before the kill, and decisions after the restart. */
const BEFORE_KILL = { decisions: 300, confirms: 25, changes: 12 };
const AFTER_RESTART = { decisions: 250 };
const DECISION_WORKERS = 8;
const CONFIRM_WORKERS = 2;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Starts `authz serve` on `port` and resolves once it prints that it listens. */
function startServer(databaseUrl: string, port: number): Promise<ServeProcess> {
  return startServeProcess(port, {
    DATABASE_URL: databaseUrl,
    AUTHZ_ADMIN_TOKEN: ADMIN_TOKEN,
    AUTHZ_KEY_RATE_LIMIT: '1000000',
    AUTHZ_WEBHOOK_LEASE_SECONDS: String(LEASE_SECONDS),
  });
}

/** Runs `fn` over `items`, at most `limit` at once. */
async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

/**
 * A webhook receiver on 127.0.0.1: verifies each signature, answers 200 and
 * keeps the distinct envelope ids of the deliveries it answered 200. While
 * `hold` is on it answers nothing: those deliveries stay in flight until
 * `dropHeld()` closes their connections, unanswered (not counted as delivered).
 */
function startReceiver() {
  let secret = '';
  const delivered = new Map<string, { type: string; times: number; maxAttempt: number }>();
  let badSignatures = 0;
  let hold = false;
  const held: Array<{ id: string; res: ServerResponse }> = [];
  const server: HttpServer = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      if (!secret || !verifyWebhookSignature(raw, req.headers['x-service-signature'], secret)) {
        badSignatures++;
        res.writeHead(401).end();
        return;
      }
      const envelope = JSON.parse(raw.toString('utf8')) as { id: string; type: string };
      if (hold) {
        held.push({ id: envelope.id, res });
        return;
      }
      const attempt = Number(req.headers['x-service-delivery-attempt']);
      // A little latency, like a real receiver.
      setTimeout(
        () =>
          res.writeHead(200).end(() => {
            const seen = delivered.get(envelope.id);
            if (seen) {
              seen.times++;
              seen.maxAttempt = Math.max(seen.maxAttempt, attempt);
            } else {
              delivered.set(envelope.id, { type: envelope.type, times: 1, maxAttempt: attempt });
            }
          }),
        3,
      );
    });
  });
  return {
    delivered,
    badSignatures: () => badSignatures,
    setSecret: (s: string) => {
      secret = s;
    },
    hold: () => {
      hold = true;
    },
    held: () => held.length,
    /** Closes the held deliveries' connections unanswered, stops holding; returns their event ids. */
    dropHeld: () => {
      hold = false;
      const ids = held.splice(0).map((h) => {
        h.res.destroy();
        return h.id;
      });
      return ids;
    },
    listen: () =>
      new Promise<number>((resolve) =>
        server.listen(0, HOST, () => resolve((server.address() as { port: number }).port)),
      ),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Connections still open (a held answer, a keep-alive socket) would keep close() waiting.
        server.closeAllConnections();
      }),
  };
}

interface Answered {
  id: string;
  effect: string;
  agent: string;
  kind: 'usd' | 'calls' | 'docs' | 'deny';
  amount: number | null;
  afterRestart: boolean;
}

describe('crash recovery: SIGKILL of `authz serve` under load, restart on the same PostgreSQL', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
  const procs = new Set<ServeProcess>();
  const receiver = startReceiver();

  beforeAll(() => {
    ensureBuilt();
  });

  afterAll(async () => {
    await Promise.all([...procs].map((p) => stopServer(p)));
    await receiver.close();
    await db?.drop();
  }, 60_000);

  it('loses no answered decision, confirm or event, and never overspends a budget', async () => {
    db = await createTestDatabase();
    const port = await freePort();
    const base = `http://${HOST}:${port}`;
    let server = await startServer(db.url, port);
    procs.add(server);

    const account = await request(base, ADMIN_TOKEN, 'POST', '/admin/accounts', { name: 'crash-recovery' });
    expect(account.status, JSON.stringify(account.body)).toBe(201);
    const created = await request(base, ADMIN_TOKEN, 'POST', `/admin/accounts/${account.body.id}/api-keys`, {
      environment: 'test',
      scopes: ['*'],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const key = created.body.key as string;
    const api = (method: string, path: string, body?: unknown) => request(base, key, method, path, body);

    // The endpoint first, so that every event of this environment has a delivery.
    const receiverPort = await receiver.listen();
    const hook = await api('POST', '/v1/webhooks', { url: `http://${HOST}:${receiverPort}/hooks`, events: ['*'] });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    receiver.setSecret(hook.body.secret as string);

    const policies = [
      {
        id: 'pol_usd',
        name: 'usd',
        effect: 'allow',
        agents: ['usd-*'],
        actions: ['payments.charge'],
        budget: { unit: 'USD', limit: USD_LIMIT, period: 'monthly', threshold_alert: 0.5 },
      },
      {
        id: 'pol_calls',
        name: 'calls',
        effect: 'allow',
        agents: ['calls-*'],
        actions: ['orders.read'],
        budget: { unit: 'calls', limit: CALLS_LIMIT, period: 'monthly', threshold_alert: 0.5 },
      },
      { id: 'pol_docs', name: 'docs', effect: 'allow', actions: ['docs.read'] },
      { id: 'pol_block', name: 'block', effect: 'deny', actions: ['files.delete'] },
      { id: 'pol_toggle', name: 'toggle', effect: 'allow', agents: ['toggle-*'], actions: ['reports.view'] },
    ];
    for (const p of policies) {
      const r = await api('POST', '/v1/policies', p);
      expect(r.status, JSON.stringify(r.body)).toBe(201);
    }
    // Agents revoked and restored during the load (an agent must be known to be revoked).
    const revocable = ['rev-0', 'rev-1', 'rev-2'];
    for (const a of revocable)
      expect((await api('POST', '/v1/decisions', { agent_id: a, action: 'docs.read' })).status).toBe(200);

    // --- the load ---
    const answered: Answered[] = [];
    const confirmQueue: Answered[] = [];
    /** Confirms answered 200: decision id -> the amount sent (null: none, the held amount). */
    const confirmed = new Map<string, number | null>();
    let changes = 0;
    let restarted = false;
    let stop = false;
    /** HTTP answers other than 200, by route kind and status (transport errors are counted apart). */
    const unexpected: string[] = [];
    let transportErrors = 0;
    let next = 0;

    const decisionWorker = async () => {
      while (!stop) {
        const i = next++;
        const slot = i % 10;
        let kind: Answered['kind'];
        let body: Record<string, unknown>;
        if (slot < 3) {
          kind = 'usd';
          body = {
            agent_id: `usd-${i % 3}`,
            action: 'payments.charge',
            resource: `invoice:${i}`,
            amount: 1 + (i % 9),
            ttl_seconds: 3600,
          };
        } else if (slot < 6) {
          kind = 'calls';
          body = { agent_id: `calls-${i % 3}`, action: 'orders.read', resource: `order:${i}`, ttl_seconds: 3600 };
        } else if (slot < 9) {
          kind = 'docs';
          body = { agent_id: `docs-${i % 40}`, action: 'docs.read', resource: `doc:${i}` };
        } else {
          kind = 'deny';
          body = { agent_id: `docs-${i % 40}`, action: 'files.delete', resource: `file:${i}` };
        }
        const wasRestarted = restarted;
        let r: Reply;
        try {
          r = await api('POST', '/v1/decisions', body);
        } catch {
          transportErrors++;
          await sleep(20);
          continue;
        }
        if (r.status !== 200) {
          unexpected.push(`decision ${r.status} ${JSON.stringify(r.body)}`);
          continue;
        }
        const a: Answered = {
          id: r.body.id,
          effect: r.body.effect,
          agent: body.agent_id as string,
          kind,
          amount: (body.amount as number | undefined) ?? null,
          afterRestart: wasRestarted,
        };
        answered.push(a);
        if (kind === 'usd' && a.effect === 'allow') confirmQueue.push(a);
      }
    };

    // Confirm about two thirds of the allowed charges, some for less than was held.
    const confirmWorker = confirmLoad({
      queue: confirmQueue,
      stopped: () => stop,
      api,
      onReply: (d, amount, r) => {
        if (r.status === 200) confirmed.set(d.id, amount);
        else unexpected.push(`confirm ${r.status} ${JSON.stringify(r.body)}`);
      },
      onTransportError: () => {
        transportErrors++;
      },
    });

    const changeWorker = async () => {
      for (let j = 0; !stop; j++) {
        const calls: Array<[string, string, unknown?]> =
          j % 2 === 0
            ? [['PUT', '/v1/policies/pol_toggle', { ...policies[4], priority: 100 + (j % 50) }]]
            : [
                ['POST', `/v1/agents/${revocable[j % 3]}/revoke`],
                ['POST', `/v1/agents/${revocable[j % 3]}/restore`],
              ];
        for (const [method, path, body] of calls) {
          try {
            const r = await api(method, path, body);
            if (r.status === 200) changes++;
            else unexpected.push(`${method} ${path} ${r.status} ${JSON.stringify(r.body)}`);
          } catch {
            transportErrors++;
            await sleep(20);
          }
        }
        await sleep(5);
      }
    };

    const workers = [
      ...Array.from({ length: DECISION_WORKERS }, decisionWorker),
      ...Array.from({ length: CONFIRM_WORKERS }, confirmWorker),
      changeWorker(),
    ];

    // Kill once enough of every kind has been answered, while every worker is still sending.
    const waitFor = async (what: string, done: () => boolean, deadlineMs = 60_000) => {
      const deadline = Date.now() + deadlineMs;
      while (!done()) {
        if (Date.now() > deadline) {
          stop = true;
          throw new Error(
            `timed out waiting for ${what}: ${answered.length} decisions, ${confirmed.size} confirms, ${changes} changes; ${unexpected.slice(0, 5).join('; ')}`,
          );
        }
        await sleep(10);
      }
    };
    await waitFor(
      'the load before the kill',
      () =>
        answered.length >= BEFORE_KILL.decisions &&
        confirmed.size >= BEFORE_KILL.confirms &&
        changes >= BEFORE_KILL.changes,
    );
    // Kill while deliveries are in flight: the receiver stops answering until some are waiting.
    receiver.hold();
    await waitFor('deliveries in flight', () => receiver.held() >= 3);
    server.child.kill('SIGKILL');
    const died = await server.exited;
    expect(died.signal).toBe('SIGKILL');
    procs.delete(server);
    // Claimed by the dead process, never answered: only its lease running out lets them be sent again.
    const stranded = receiver.dropHeld().filter((id) => !receiver.delivered.has(id));
    const beforeKill = answered.length;
    const confirmsBeforeKill = confirmed.size;

    // Same database, same port: the workers carry on against the new process.
    server = await startServer(db.url, port);
    procs.add(server);
    restarted = true;
    await waitFor(
      'the load after the restart',
      () => answered.filter((a) => a.afterRestart).length >= AFTER_RESTART.decisions,
    );
    stop = true;
    await Promise.all(workers);

    expect(unexpected, unexpected.slice(0, 10).join('\n')).toEqual([]);
    expect(beforeKill).toBeGreaterThanOrEqual(BEFORE_KILL.decisions);
    expect(confirmsBeforeKill).toBeGreaterThanOrEqual(BEFORE_KILL.confirms);

    // --- every answered decision reads back the same, every 200 confirm is confirmed ---
    const stored = new Map<string, JsonObject>();
    await mapLimit(answered, 16, async (a) => {
      const r = await api('GET', `/v1/decisions/${a.id}`);
      expect(r.status, `${a.id}: ${JSON.stringify(r.body)}`).toBe(200);
      expect(r.body, a.id).toMatchObject({ id: a.id, effect: a.effect, agent_id: a.agent, amount: a.amount });
      stored.set(a.id, r.body);
    });
    // Confirmed without an amount: the amount decided is the amount confirmed.
    for (const [id, amount] of confirmed) {
      expect(stored.get(id), id).toMatchObject({
        status: 'confirmed',
        confirmed_amount: amount ?? stored.get(id)!.amount,
      });
    }

    // --- budgets ---
    const allDecisionsOf = async (agentId: string) => {
      const rows: Array<JsonObject> = [];
      let after: string | undefined;
      for (;;) {
        const r = await api(
          'GET',
          `/v1/decisions?agent_id=${agentId}&limit=100${after ? `&starting_after=${after}` : ''}`,
        );
        expect(r.status).toBe(200);
        rows.push(...(r.body.data as Array<JsonObject>));
        if (!r.body.has_more) return rows;
        after = rows[rows.length - 1]!.id as string;
      }
    };
    const budgetOf = async (agentId: string, policyId: string) => {
      const r = await api('GET', `/v1/budgets?agent_id=${agentId}&limit=100`);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      const row = (r.body.data as Array<JsonObject>).find((b) => b.policy_id === policyId);
      expect(row, `${policyId} for ${agentId}`).toBeDefined();
      return row!;
    };
    const cents = (x: number) => Math.round(x * 100);
    for (const agentId of ['usd-0', 'usd-1', 'usd-2']) {
      const b = await budgetOf(agentId, 'pol_usd');
      expect(cents(b.consumed + b.held), `${agentId}: ${JSON.stringify(b)}`).toBeLessThanOrEqual(cents(USD_LIMIT));
      const inStore = await allDecisionsOf(agentId);
      // Consumption is exactly the decisions stored as confirmed (the confirmed amount, else the held one) ...
      const confirmedInStore = inStore.filter((d) => d.status === 'confirmed');
      const consumedByStore = confirmedInStore.reduce((s, d) => s + cents(d.confirmed_amount ?? d.amount), 0);
      expect(cents(b.consumed), agentId).toBe(consumedByStore);
      // ... which include every confirm answered 200.
      const confirmedIds = new Set(confirmedInStore.map((d) => d.id as string));
      for (const a of answered.filter((x) => x.agent === agentId && confirmed.has(x.id)))
        expect(confirmedIds.has(a.id), a.id).toBe(true);
      // Every pending allow still holds its amount (a hold whose decision was never written may add to it).
      const pendingHeld = inStore.filter((d) => d.status === 'pending').reduce((s, d) => s + cents(d.amount), 0);
      expect(cents(b.held), agentId).toBeGreaterThanOrEqual(pendingHeld);
    }
    for (const agentId of ['calls-0', 'calls-1', 'calls-2']) {
      const b = await budgetOf(agentId, 'pol_calls');
      expect(b.held).toBe(0);
      expect(b.consumed, `${agentId}: ${JSON.stringify(b)}`).toBeLessThanOrEqual(CALLS_LIMIT);
      const mine = answered.filter((a) => a.agent === agentId);
      const allowed = mine.filter((a) => a.effect === 'allow').length;
      expect(allowed).toBeLessThanOrEqual(CALLS_LIMIT);
      expect(b.consumed).toBeGreaterThanOrEqual(allowed);
      // More answers than the limit: the budget was used up, the rest denied budget.exceeded.
      if (mine.length > CALLS_LIMIT) {
        expect(b.consumed).toBe(CALLS_LIMIT);
        expect(mine.filter((a) => stored.get(a.id)!.reason === 'budget.exceeded').length).toBe(mine.length - allowed);
      }
    }

    // --- events, and their delivery ---
    const listEvents = async () => {
      const events: Array<JsonObject> = [];
      let after: string | undefined;
      for (;;) {
        const r = await api('GET', `/v1/events?limit=100${after ? `&starting_after=${after}` : ''}`);
        expect(r.status).toBe(200);
        events.push(...(r.body.data as Array<JsonObject>));
        if (!r.body.has_more) return events;
        after = events[events.length - 1]!.id as string;
      }
    };
    const events = await listEvents();
    const decisionEvents = new Map<string, string>();
    for (const e of events)
      if ((e.type as string).startsWith('decision.'))
        decisionEvents.set(e.data.decision.id as string, e.type as string);
    for (const a of answered) expect(decisionEvents.get(a.id), a.id).toBe(`decision.${a.effect}`);
    const types = new Set(events.map((e) => e.type as string));
    for (const t of [
      'decision.allow',
      'decision.deny',
      'agent.registered',
      'agent.revoked',
      'policy.updated',
      'budget.threshold',
    ])
      expect(types, t).toContain(t);

    const missing = () => events.filter((e) => !receiver.delivered.has(e.id as string));
    const deadline = Date.now() + 90_000;
    while (missing().length > 0 && Date.now() < deadline) await sleep(100);
    expect(
      missing().map((e) => `${e.id} ${e.type}`),
      `${missing().length} of ${events.length} events not delivered`,
    ).toEqual([]);
    expect(receiver.badSignatures()).toBe(0);
    expect(stranded.length).toBeGreaterThan(0);
    for (const id of stranded) expect(receiver.delivered.get(id)!.maxAttempt, id).toBeGreaterThan(1);
    // Everything received is a real event of this environment.
    const known = new Set((await listEvents()).map((e) => e.id as string));
    expect([...receiver.delivered.keys()].filter((id) => !known.has(id))).toEqual([]);

    // Diagnostics for the log (not assertions).
    const redelivered = [...receiver.delivered.values()].filter((d) => d.times > 1 || d.maxAttempt > 1).length;
    console.log(
      `crash-recovery: ${beforeKill} decisions answered before the kill, ${answered.length - beforeKill} after; ${confirmed.size} confirms; ${changes} changes; ` +
        `${transportErrors} transport errors; ${events.length} events, all delivered (${stranded.length} in flight at the kill; ${redelivered} more than once or on a later attempt)`,
    );
  }, 240_000);
});
