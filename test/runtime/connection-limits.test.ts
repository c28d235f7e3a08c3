/**
 * Connection limits (docs/operations.md#connection-limits), loopback only and bounded:
 * - the cap min(AUTHZ_MAX_CONNECTIONS, descriptor soft limit - 64), logged at
 *   start by a real `authz serve`; with a cap of 6, a seventh connection is
 *   closed at once while six idle sockets are open, and a freed slot serves
 *   again;
 * - a connection that sends no complete request within the timeout
 *   (AUTHZ_REQUEST_TIMEOUT_MS, 10 s by default; 1 s here, so a loaded machine's pause does not reach it) is closed: one
 *   that sends nothing, one that sends half a request, one idle after a
 *   keep-alive request;
 * - a long poll held longer than the timeout is answered (the timeout bounds
 *   receiving a request, not the wait for its answer);
 * - at most 100 long polls (`GET /v1/decisions/:id?wait=`) per API key at once:
 *   the 101st is 429 rate_limit.exceeded with Retry-After; another key is not
 *   affected; slots come back when the polls end (both stores).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configFromEnv } from '../../runtime/config.js';
import { connectionCap, fdSoftLimit, RESERVED_DESCRIPTORS } from '../../runtime/http/connection-limits.js';
import { MAX_LONG_POLLS_PER_KEY } from '../../runtime/http/long-polls.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import {
  ensureBuilt,
  freePort,
  HOST,
  startServeProcess,
  stopServer,
  type ServeProcess,
} from '../helpers/server-process.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';

/** Polls `check` every 20 ms until it holds (the test's timeout bounds it). */
async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((r) => setTimeout(r, 20));
}

/** A raw TCP connection to the server; resolves once connected. */
function open(port: number): Promise<Socket & { ended: Promise<string> }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, HOST) as Socket & { ended: Promise<string> };
    let received = '';
    socket.setEncoding('utf8').on('data', (d: string) => (received += d));
    socket.ended = new Promise((r) => socket.once('close', () => r(received)));
    socket.once('connect', () => resolve(socket));
    socket.once('error', reject);
  });
}

describe('the connection cap and the request timeout', () => {
  it('the cap is AUTHZ_MAX_CONNECTIONS (default 10,000) lowered to the descriptor soft limit - 64', () => {
    expect(configFromEnv({}).maxConnections).toBe(10_000);
    expect(configFromEnv({}).requestTimeoutMs).toBe(10_000);
    expect(configFromEnv({ AUTHZ_MAX_CONNECTIONS: '50' }).maxConnections).toBe(50);
    expect(() => configFromEnv({ AUTHZ_MAX_CONNECTIONS: '0' })).toThrow(/AUTHZ_MAX_CONNECTIONS/);
    expect(() => configFromEnv({ AUTHZ_REQUEST_TIMEOUT_MS: 'soon' })).toThrow(/AUTHZ_REQUEST_TIMEOUT_MS/);
    expect(connectionCap(10_000, 1024)).toBe(1024 - RESERVED_DESCRIPTORS);
    expect(connectionCap(50, 1024)).toBe(50);
    expect(connectionCap(10_000, null)).toBe(10_000);
    // The soft limit as a shell reports it.
    const shell = execFileSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).trim();
    expect(fdSoftLimit()).toBe(shell === 'unlimited' ? null : Number(shell));
  });

  describe('authz serve with AUTHZ_MAX_CONNECTIONS=6 and AUTHZ_REQUEST_TIMEOUT_MS=1000', () => {
    let server: ServeProcess;
    let port: number;
    let dataDir: string;
    beforeAll(async () => {
      ensureBuilt();
      port = await freePort();
      dataDir = mkdtempSync(join(tmpdir(), 'authz-connections-'));
      server = await startServeProcess(
        port,
        {
          AUTHZ_DATA_DIR: dataDir,
          AUTHZ_MASTER_KEY: 'connection-limits-master-key-0123',
          AUTHZ_MAX_CONNECTIONS: '6',
          AUTHZ_REQUEST_TIMEOUT_MS: '1000',
          DATABASE_URL: '',
        },
        120_000,
      );
    }, 180_000);
    afterAll(async () => {
      if (server) await stopServer(server);
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    });

    it('logs the cap at start', () => {
      const fd = fdSoftLimit();
      const expected = connectionCap(6, fd);
      expect(server.stdout.join('\n')).toContain(
        `Connections: at most ${expected} (AUTHZ_MAX_CONNECTIONS 6, file descriptors: ${fd} - ${RESERVED_DESCRIPTORS}); closed without a complete request within 1 s`,
      );
    });

    it(
      'closes a connection that sends nothing, half a request, or nothing after a keep-alive request',
      { timeout: 30_000 },
      async () => {
        const silent = await open(port);
        const half = await open(port);
        half.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n');
        const kept = await open(port);
        kept.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
        // Each is closed by the server (408 for the first two; the idle keep-alive one after its answer).
        expect(await silent.ended).toMatch(/^HTTP\/1\.1 408/);
        expect(await half.ended).toMatch(/^HTTP\/1\.1 408/);
        expect(await kept.ended).toMatch(/^HTTP\/1\.1 200/);
      },
    );
  });

  it('past the cap a new connection is closed at once; a freed slot serves again', { timeout: 60_000 }, async () => {
    const rt = await startRuntime('embedded', { config: { maxConnections: 6 } });
    const held: Array<Socket & { ended: Promise<string> }> = [];
    try {
      expect(rt.app.server.maxConnections).toBe(connectionCap(6, fdSoftLimit()));
      await rt.app.listen({ port: 0, host: HOST });
      const { port } = rt.app.server.address() as AddressInfo;
      const connections = () =>
        new Promise<number>((resolve, reject) => rt.app.server.getConnections((e, n) => (e ? reject(e) : resolve(n))));
      // Six idle connections (the 10 s request timeout is far off) fill the cap.
      for (let i = 0; i < 6; i++) held.push(await open(port));
      await until(async () => (await connections()) === 6);
      // The seventh is accepted by the kernel, then closed by the server without an answer.
      const seventh = await open(port);
      expect(await seventh.ended).toBe('');
      const eighth = await open(port);
      eighth.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      expect(await eighth.ended).toBe('');
      // A freed slot serves again.
      held.pop()!.destroy();
      await until(async () => (await connections()) < 6);
      expect((await fetch(`http://${HOST}:${port}/healthz`)).status).toBe(200);
    } finally {
      for (const socket of held) socket.destroy();
      await rt.close();
    }
  });
});

describe('1,000 silent sockets at the connection cap (the default 10 s request timeout)', () => {
  const SOCKETS = 1000;
  // Node's own checks (headersTimeout, requestTimeout) on, and off: the service closes them either way
  // (a silent socket was seen open 150 s on `authz serve`).
  it.each([
    ["with Node's checks", false],
    ["without Node's checks", true],
  ])(
    'all closed by 15 s, %s, each with a 408; a real request is refused at the cap and answered meanwhile',
    { timeout: 90_000 },
    async (_label, withoutNodeChecks) => {
      const rt = await startRuntime('embedded', { config: { maxConnections: SOCKETS } });
      const sockets: Array<Socket & { ended: Promise<string> }> = [];
      try {
        expect(rt.services.config.requestTimeoutMs).toBe(10_000);
        if (withoutNodeChecks) {
          rt.app.server.headersTimeout = 0;
          rt.app.server.requestTimeout = 0;
        }
        await rt.app.listen({ port: 0, host: HOST });
        const { port } = rt.app.server.address() as AddressInfo;
        const connections = () =>
          new Promise<number>((resolve, reject) =>
            rt.app.server.getConnections((e, n) => (e ? reject(e) : resolve(n))),
          );
        const started = performance.now();
        const closedAt: number[] = [];
        // Half send nothing, half a request line; opened a hundred at a time.
        for (let i = 0; i < SOCKETS; i += 100) {
          const batch = await Promise.all(Array.from({ length: 100 }, () => open(port)));
          batch.forEach((socket, j) => {
            if ((i + j) % 2 === 1) socket.write('GET /healthz HTT');
            void socket.ended.then(() => closedAt.push(performance.now() - started));
          });
          sockets.push(...batch);
        }
        await until(async () => (await connections()) === SOCKETS);
        // At the cap: a new connection is closed at once, unanswered.
        const refused = await open(port);
        refused.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
        expect(await refused.ended).toBe('');
        // A real client retrying is answered once the silent sockets are closed.
        let answeredAt = -1;
        while (answeredAt < 0 && performance.now() - started < 20_000) {
          const status = await fetch(`http://${HOST}:${port}/healthz`, { signal: AbortSignal.timeout(2000) }).then(
            (r) => r.status,
            () => 0,
          );
          if (status === 200) answeredAt = performance.now() - started;
          else await new Promise((r) => setTimeout(r, 100));
        }
        // Bounded: 20 s from the first socket, then whatever is still open fails the test.
        await until(() => closedAt.length === SOCKETS || performance.now() - started > 20_000);
        expect(closedAt.length, 'sockets closed by the server within 20 s').toBe(SOCKETS);
        const received = await Promise.all(sockets.map((socket) => socket.ended));
        const last = Math.max(...closedAt);
        console.log(
          `${SOCKETS} silent sockets ${_label}: closed from ${Math.round(Math.min(...closedAt))} to ${Math.round(last)} ms; real request answered at ${Math.round(answeredAt)} ms`,
        );
        expect(received.filter((r) => !/^HTTP\/1\.1 408/.test(r))).toEqual([]);
        expect(last).toBeLessThanOrEqual(15_000);
        expect(answeredAt).toBeGreaterThan(0);
        expect(answeredAt).toBeLessThanOrEqual(15_000);
      } finally {
        for (const socket of sockets) socket.destroy();
        await rt.close();
      }
    },
  );
});

describe('the request timeout and long polls', () => {
  it(
    'a long poll outlives the request timeout: the timeout bounds receiving the request, not holding its answer',
    { timeout: 60_000 },
    async () => {
      const rt = await startRuntime('embedded', { config: { requestTimeoutMs: 1500 } });
      try {
        await rt.setPolicies([
          {
            id: 'pol_wait_long',
            effect: 'review',
            actions: ['payments.refund'],
            approval: { required: true, timeout_seconds: 600 },
          },
        ]);
        await rt.app.listen({ port: 0, host: HOST });
        const base = `http://${HOST}:${(rt.app.server.address() as AddressInfo).port}`;
        const id = json(
          await rt.call(rt.testKey, {
            method: 'POST',
            url: '/v1/decisions',
            payload: { agent_id: 'poll-long', action: 'payments.refund' },
          }),
        ).id as string;
        // Held 4 s, past the 1.5 s timeout: answered 200 (still awaiting approval), not 408 or a closed socket.
        const polled = await fetch(`${base}/v1/decisions/${id}?wait=4`, {
          headers: { authorization: `Bearer ${rt.testKey}` },
        });
        expect(polled.status).toBe(200);
        expect(((await polled.json()) as { status: string }).status).toBe('awaiting_approval');
      } finally {
        await rt.close();
      }
    },
  );
});

describe.each(STORE_KINDS)('long polls per API key (%s store)', (kind) => {
  let rt: TestRuntime;
  let base: string;
  beforeAll(async () => {
    rt = await startRuntime(kind);
    await rt.setPolicies([
      {
        id: 'pol_wait',
        effect: 'review',
        actions: ['payments.refund'],
        approval: { required: true, timeout_seconds: 600 },
      },
    ]);
    await rt.app.listen({ port: 0, host: HOST });
    base = `http://${HOST}:${(rt.app.server.address() as AddressInfo).port}`;
  });
  afterAll(() => rt.close());

  it(
    'at most 100 at once per key: the 101st is 429 rate_limit.exceeded with Retry-After; other keys and later polls are served',
    { timeout: 120_000 },
    async () => {
      const made = await rt.call(rt.testKey, {
        method: 'POST',
        url: '/v1/decisions',
        payload: { agent_id: 'poll-bot', action: 'payments.refund' },
      });
      const id = json(made).id as string;
      expect(json(made).status).toBe('awaiting_approval');
      const poll = (key: string, wait = 60) =>
        fetch(`${base}/v1/decisions/${id}?wait=${wait}`, { headers: { authorization: `Bearer ${key}` } });
      const polls = Array.from({ length: MAX_LONG_POLLS_PER_KEY }, () => poll(rt.testKey));
      await until(() => rt.services.reviewWaiters.size >= MAX_LONG_POLLS_PER_KEY);

      const refused = await poll(rt.testKey);
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('rate_limit.exceeded');
      // A plain GET (no wait) of the same key is not a long poll.
      expect(
        (await fetch(`${base}/v1/decisions/${id}`, { headers: { authorization: `Bearer ${rt.testKey}` } })).status,
      ).toBe(200);
      // Another key still long-polls: approving the decision answers it and the hundred.
      const reviewer = await rt.keyWith(['decisions:read', 'reviews:write']);
      const other = poll(reviewer);
      await until(() => rt.services.reviewWaiters.size >= MAX_LONG_POLLS_PER_KEY + 1);
      const approved = await rt.call(reviewer, {
        method: 'POST',
        url: `/v1/decisions/${id}/review`,
        payload: { verdict: 'approve', reviewer: 'ops' },
      });
      expect(approved.statusCode, approved.body).toBe(200);
      const answers = await Promise.all([...polls, other]);
      expect(answers.map((r) => r.status)).toEqual(Array(MAX_LONG_POLLS_PER_KEY + 1).fill(200));
      await Promise.all(answers.map((r) => r.arrayBuffer()));
      // The slots are back: the key polls again.
      expect((await poll(rt.testKey, 1)).status).toBe(200);
    },
  );
});
