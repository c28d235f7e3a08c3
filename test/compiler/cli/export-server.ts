/**
 * A stand-in for the service's decision export, on 127.0.0.1, for `authz replay`
 * tests: `GET /v1/decisions?limit=1` (answers with a fixed `Date` header, the
 * "service's current time") and `GET /v1/decisions/export?since=` (NDJSON,
 * chunked, one write per line, lines made on demand so that a large export takes
 * no memory here). A gate may hold the stream at given line numbers until the
 * test lets it go on. Both check the bearer key.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { EvaluationInput, Evaluation } from '../../../compiler/index.js';

export const KEY = 'svc_test_sk_0123456789abcdefghijklmnopqrstuv';

export interface ExportOptions {
  /** Number of lines. */
  lines: number;
  /** The i-th line (0-based), without its newline. */
  line: (i: number) => string;
  /** The service's current time, sent as the Date header. */
  now?: Date;
  /** Awaited before writing line i (0-based); lets a test pause the stream. */
  gate?: (i: number) => Promise<void> | void;
  /** Answer the export with this status and body instead. */
  fail?: { status: number; body: string };
  /** Send no Date header on the preflight. */
  noDate?: boolean;
}

export interface ExportServer {
  url: string;
  /** The request paths received, in order (query strings included). */
  requests: string[];
  close(): Promise<void>;
}

export async function startExportServer(options: ExportOptions): Promise<ExportServer> {
  const requests: string[] = [];
  const now = options.now ?? new Date('2026-11-21T10:00:00.000Z');
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    requests.push(req.url ?? '');
    res.sendDate = false; // the Date header, when sent, is the service's time below
    if (req.headers.authorization !== `Bearer ${KEY}`) {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'auth.invalid_key', message: 'The API key is not valid.' } }));
      return;
    }
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/v1/decisions' && url.searchParams.get('limit') === '1') {
      res.writeHead(200, {
        'content-type': 'application/json',
        ...(options.noDate ? {} : { date: now.toUTCString() }),
      });
      res.end(JSON.stringify({ object: 'list', data: [], has_more: false }));
      return;
    }
    if (url.pathname !== '/v1/decisions/export' || !url.searchParams.get('since')) {
      res.writeHead(404).end();
      return;
    }
    if (options.fail) {
      res.writeHead(options.fail.status, { 'content-type': 'application/json' }).end(options.fail.body);
      return;
    }
    void stream(res, options);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function stream(res: ServerResponse, options: ExportOptions): Promise<void> {
  res.writeHead(200, { 'content-type': 'application/x-ndjson' });
  for (let i = 0; i < options.lines; i++) {
    await options.gate?.(i);
    if (!res.write(`${options.line(i)}\n`)) await once(res, 'drain');
  }
  res.end();
}

/** A stored decision as the export gives it (the decision resource plus its context). */
export function storedDecision(
  id: string,
  request: EvaluationInput,
  outcome: Pick<Evaluation, 'effect' | 'reason' | 'policy_id'>,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    id,
    object: 'decision',
    effect: outcome.effect,
    reason: outcome.reason,
    agent_id: request.agent_id,
    action: request.action,
    resource: request.resource ?? null,
    amount: request.amount ?? null,
    policy_id: outcome.policy_id,
    status: outcome.effect === 'deny' ? 'denied' : 'confirmed',
    evaluated_at: '2026-11-20T09:00:00.000Z',
    expires_at: '2026-11-20T09:05:00.000Z',
    ttl_seconds: 300,
    permit_token: null,
    livemode: false,
    metadata: { matched_policy_ids: outcome.policy_id ? [outcome.policy_id] : [], warnings: [] },
    context: request.context ?? {},
    ...extra,
  };
}
