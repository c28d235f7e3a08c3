/**
 * OpenTelemetry traces (AUTHZ_OTEL=1), exported over OTLP/HTTP as the standard
 * variables say (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
 * OTEL_EXPORTER_OTLP_HEADERS, OTEL_SERVICE_NAME, ...: read by the exporter and
 * the SDK themselves). A span per request (`registerRequestSpans`), a span per
 * decision with its store calls as children (the decision service's
 * `inSpan`). Imported only when tracing is on.
 */
import { context, SpanKind, SpanStatusCode, trace, type Span, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type { FastifyInstance } from 'fastify';
import type { SpanHandle, Tracing } from './tracing.js';

declare module 'fastify' {
  interface FastifyRequest {
    otelSpan?: Span;
  }
}

class OtelTracing implements Tracing {
  readonly enabled = true;

  constructor(
    readonly tracer: Tracer,
    private readonly provider: NodeTracerProvider,
  ) {}

  inSpan<T>(name: string, work: (span: SpanHandle) => Promise<T>): Promise<T> {
    return this.tracer.startActiveSpan(name, async (span) => {
      try {
        return await work(span as unknown as SpanHandle);
      } catch (error) {
        span.recordException(error as Error);
        span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
        throw error;
      } finally {
        span.end();
      }
    });
  }

  flush(): Promise<void> {
    return this.provider.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.provider.shutdown();
  }
}

let contextManagerSet = false;

/** Starts the SDK: a tracer provider exporting in batches over OTLP/HTTP. */
export function startOtel(serviceName = process.env.OTEL_SERVICE_NAME ?? 'agent-authz'): Tracing {
  if (!contextManagerSet) {
    // Async context carries the active span from the request hook to the decision's spans.
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    contextManagerSet = true;
  }
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': serviceName }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  return new OtelTracing(provider.getTracer('agent-authz'), provider);
}

/**
 * A server span per request: started before anything else runs, the rest of the
 * request (hooks, handler) in its context, ended with the status code.
 */
export function registerRequestSpans(app: FastifyInstance, tracing: Tracing): void {
  if (!(tracing instanceof OtelTracing)) return;
  const { tracer } = tracing;
  app.addHook('onRequest', (request, _reply, done) => {
    const route = request.routeOptions.url ?? request.url.split('?')[0]!;
    const span = tracer.startSpan(`${request.method} ${route}`, {
      kind: SpanKind.SERVER,
      attributes: {
        'http.request.method': request.method,
        'http.route': route,
        'url.path': request.url.split('?')[0]!,
      },
    });
    request.otelSpan = span;
    // Fastify goes on from done() synchronously: everything after runs in the span's context.
    context.with(trace.setSpan(context.active(), span), done);
  });
  app.addHook('onResponse', async (request, reply) => {
    const span = request.otelSpan;
    if (!span) return;
    span.setAttribute('http.response.status_code', reply.statusCode);
    if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  });
}
