/**
 * AUTHZ_OTEL=1: spans reach an OTLP/HTTP receiver (a real one on 127.0.0.1):
 * a server span per request, a decision span under it with the decision's
 * attributes, and the store calls as its children. Off (the default), the
 * OpenTelemetry SDK is not loaded and nothing is sent.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_TRACING } from '../../runtime/telemetry/tracing.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: Array<{ key: string; value: Record<string, unknown> }>;
}

/** An OTLP/HTTP traces receiver (JSON), keeping every span it is sent. */
async function otlpReceiver(): Promise<{ server: Server; url: string; spans: OtlpSpan[]; requests: number }> {
  const state = { spans: [] as OtlpSpan[], requests: 0 };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      state.requests++;
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans: Array<{ scopeSpans: Array<{ spans: OtlpSpan[] }> }>;
      };
      for (const rs of body.resourceSpans) for (const ss of rs.scopeSpans) state.spans.push(...ss.spans);
      res.setHeader('content-type', 'application/json');
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return Object.assign(state, { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
}

const attr = (span: OtlpSpan, key: string) => {
  const v = span.attributes.find((a) => a.key === key)?.value;
  return v && (v.stringValue ?? v.intValue ?? v.boolValue);
};

for (const kind of STORE_KINDS) {
  describe(`traces (${kind})`, () => {
    let receiver: Awaited<ReturnType<typeof otlpReceiver>>;
    let rt: TestRuntime;
    const saved = process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;

    beforeAll(async () => {
      receiver = await otlpReceiver();
      process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = `${receiver.url}/v1/traces`;
      rt = await startRuntime(kind, { config: { otel: true } });
      await rt.setPolicies([{ id: 'pol_read', effect: 'allow', actions: ['orders.read'] }]);
    });
    afterAll(async () => {
      await rt.close();
      await new Promise((r) => receiver.server.close(r));
      if (saved === undefined) delete process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
      else process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = saved;
    });

    it('a request span, the decision span under it with its attributes, the store calls under that', async () => {
      const r = await rt.call(rt.testKey, {
        method: 'POST',
        url: '/v1/decisions',
        payload: { agent_id: 'traced-1', action: 'orders.read' },
      });
      const decision = json(r);
      await rt.services.tracing.flush();
      const spans = receiver.spans;
      const decisionSpan = spans.find((s) => s.name === 'decision' && attr(s, 'authz.decision_id') === decision.id);
      expect(decisionSpan, JSON.stringify(spans.map((s) => s.name))).toBeDefined();
      expect({
        agent: attr(decisionSpan!, 'authz.agent_id'),
        action: attr(decisionSpan!, 'authz.action'),
        effect: attr(decisionSpan!, 'authz.effect'),
        reason: attr(decisionSpan!, 'authz.reason'),
        policy: attr(decisionSpan!, 'authz.policy_id'),
      }).toEqual({
        agent: 'traced-1',
        action: 'orders.read',
        effect: 'allow',
        reason: 'policy.matched',
        policy: 'pol_read',
      });
      const requestSpan = spans.find((s) => s.spanId === decisionSpan!.parentSpanId);
      expect(requestSpan?.name).toBe('POST /v1/decisions');
      expect(Number(attr(requestSpan!, 'http.response.status_code'))).toBe(200);
      const children = spans.filter((s) => s.parentSpanId === decisionSpan!.spanId).map((s) => s.name);
      expect(children).toContain('store.write');
      expect(new Set(spans.filter((s) => s.traceId === decisionSpan!.traceId).map((s) => s.name))).toEqual(
        new Set(['POST /v1/decisions', 'decision', ...children]),
      );
      // Another route: a request span of its own trace, no decision span.
      await rt.call(rt.testKey, { method: 'GET', url: `/v1/decisions/${decision.id}` });
      await rt.services.tracing.flush();
      const read = receiver.spans.find((s) => s.name === 'GET /v1/decisions/:id');
      expect(read).toBeDefined();
      expect(read!.traceId).not.toBe(decisionSpan!.traceId);
    });
  });
}

describe('tracing off', () => {
  it('is the no-op tracing: work runs as it is and nothing is exported', async () => {
    const rt = await startRuntime('embedded');
    try {
      expect(rt.services.tracing).toBe(NO_TRACING);
      expect(await NO_TRACING.inSpan('x', async () => 42)).toBe(42);
    } finally {
      await rt.close();
    }
  });
});
