/**
 * The proxy's confirms and rejects go out in batches (settle-queue.ts): the
 * queue itself, and end to end that every confirm still arrives, exactly once,
 * when its first attempt's answer is lost and the client library retries it
 * (a real service on loopback, both stores; between proxy and service a relay
 * on 127.0.0.1 that drops the answer of each confirm's first attempt after the
 * service has applied it).
 */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SettleQueue, type SettleVerb } from '../../clients/mcp-proxy/settle-queue.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { startRuntime, START, type TestRuntime } from '../runtime/helpers/app.js';
import { ensureProxyBuilt, recorded, scratch, startStdioProxy, textOf } from './helpers/proxy.js';
import type { JsonObject } from '../helpers/json.js';

/** Lets every pending promise callback and timer of zero delay run. */
const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('SettleQueue', () => {
  function queue(windowMs: number, maxBatch: number) {
    const sent: Array<[string, SettleVerb]> = [];
    const q = new SettleQueue({ send: async (id, verb) => void sent.push([id, verb]), windowMs, maxBatch });
    return { q, sent };
  }

  it('holds settles for the window and sends them together when the batch is full', async () => {
    // A window of an hour: only the batch size (or flush) sends anything here.
    const { q, sent } = queue(3_600_000, 3);
    const done: string[] = [];
    const a = q.add('dec_a', 'confirm').then(() => done.push('a'));
    const b = q.add('dec_b', 'reject').then(() => done.push('b'));
    await turn();
    expect(sent).toEqual([]);
    expect(q.pending).toBe(2);
    const c = q.add('dec_c', 'confirm').then(() => done.push('c'));
    await Promise.all([a, b, c]);
    expect(sent).toEqual([
      ['dec_a', 'confirm'],
      ['dec_b', 'reject'],
      ['dec_c', 'confirm'],
    ]);
    expect(done.sort()).toEqual(['a', 'b', 'c']);
    expect(q.stats).toEqual({ sent: 3, batches: 1 });
  });

  it('flush sends what waits at once; a window of 0 sends each settle at once', async () => {
    const held = queue(3_600_000, 64);
    const waiting = held.q.add('dec_1', 'confirm');
    await turn();
    expect(held.sent).toEqual([]);
    held.q.flush();
    await waiting;
    expect(held.sent).toEqual([['dec_1', 'confirm']]);
    held.q.flush();
    expect(held.q.stats).toEqual({ sent: 1, batches: 1 });

    const now = queue(0, 64);
    await now.q.add('dec_2', 'reject');
    expect(now.sent).toEqual([['dec_2', 'reject']]);
  });

  it('a short window sends on its own', async () => {
    const { q, sent } = queue(1, 64);
    await Promise.all([q.add('dec_x', 'confirm'), q.add('dec_y', 'confirm')]);
    expect(sent.map(([id]) => id)).toEqual(['dec_x', 'dec_y']);
    expect(q.pending).toBe(0);
  });
});

/** A relay to the service that loses the answer of each confirm's first attempt (after the service applied it). */
async function losingRelay(
  target: string,
): Promise<{ url: string; attempts: Map<string, string[]>; close(): Promise<void> }> {
  const attempts = new Map<string, string[]>();
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers))
      if (typeof v === 'string' && k !== 'host' && k !== 'connection' && k !== 'content-length') headers[k] = v;
    const answer = await fetch(`${target}${req.url}`, {
      method: req.method!,
      headers,
      ...(chunks.length > 0 ? { body: Buffer.concat(chunks) } : {}),
    });
    const body = Buffer.from(await answer.arrayBuffer());
    const path = req.url ?? '';
    if (/\/confirm$/.test(path)) {
      const seen = attempts.get(path) ?? [];
      seen.push(String(req.headers['idempotency-key']));
      attempts.set(path, seen);
      // Applied by the service, but the proxy never hears so: it must retry.
      if (seen.length === 1) return void req.socket.destroy();
    }
    res
      .writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' })
      .end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    attempts,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

describe.each(STORE_KINDS)('batched confirms through authz mcp-proxy (%s store)', (kind) => {
  let rt: TestRuntime;
  let base: string;

  beforeAll(async () => {
    ensureProxyBuilt();
    rt = await startRuntime(kind);
    await rt.setPolicies([
      {
        id: 'pol_charge',
        effect: 'allow',
        actions: ['payments.charge'],
        resources: ['customer:*'],
        budget: { unit: 'USD', limit: 1000, period: 'monthly' },
      },
    ]);
    await rt.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(rt.app.server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await rt?.close();
  });

  it('every confirm arrives exactly once when its first answer is lost: retried under one idempotency key, the budget consumed once', async () => {
    const relay = await losingRelay(base);
    const agentId = `settle-${Math.random().toString(36).slice(2, 8)}`;
    const files = scratch(
      `agent_id: ${agentId}\nserver: tools\ntools:\n  charge: { action: payments.charge, resource: "customer:{customer_id}", amount: amount }\n`,
    );
    const proxy = await startStdioProxy(['--config', files.config], {
      AUTHZ_URL: relay.url,
      AUTHZ_API_KEY: rt.testKey,
      RECORD_FILE: files.record,
      TOOLS_DIR: files.tools,
      PERMIT_JWKS_URL: `${base}/.well-known/jwks.json`,
      PERMIT_ISSUER: rt.services.config.baseUrl,
      PERMIT_ACCOUNT: rt.accountId,
      PERMIT_NOW_MS: String(START + 1000),
    });
    try {
      const CALLS = 6;
      for (let i = 0; i < CALLS; i++) {
        const result = await proxy.client.callTool({
          name: 'charge',
          arguments: { customer_id: `cus_${i}`, amount: 5 },
        });
        expect(textOf(result)).toBe(`charged 5 USD to cus_${i}`);
      }
      expect(recorded(files.record)).toHaveLength(CALLS);
      const list = async () => (await rt.getOk(`/v1/decisions?agent_id=${agentId}`)).data as Array<JsonObject>;
      // The confirms go out after the answers (batched, then retried): a bounded poll until every one is applied and retried.
      const retried = () =>
        relay.attempts.size === CALLS && [...relay.attempts.values()].every((keys) => keys.length >= 2);
      let decisions = await list();
      for (
        let i = 0;
        i < 400 && !(retried() && decisions.length === CALLS && decisions.every((d) => d.status !== 'pending'));
        i++
      ) {
        await new Promise((r) => setTimeout(r, 25));
        decisions = await list();
      }
      expect(decisions.map((d) => [d.status, d.confirmed_amount])).toEqual(
        Array.from({ length: CALLS }, () => ['confirmed', 5]),
      );
      // Each confirm was sent twice (the first answer lost), both times under the same key.
      expect(relay.attempts.size).toBe(CALLS);
      for (const d of decisions) {
        const keys = relay.attempts.get(`/v1/decisions/${d.id}/confirm`);
        expect(keys).toHaveLength(2);
        expect(new Set(keys).size).toBe(1);
      }
      const budget = ((await rt.getOk(`/v1/budgets?agent_id=${agentId}`)).data as Array<JsonObject>).find(
        (b) => b.policy_id === 'pol_charge',
      );
      expect(budget).toMatchObject({ unit: 'USD', consumed: 5 * CALLS, held: 0 });
      expect(proxy.stderr()).not.toMatch(/could not confirm/);
    } finally {
      await proxy.close();
      await relay.close();
    }
  });
});
