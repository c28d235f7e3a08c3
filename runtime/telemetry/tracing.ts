/**
 * What the service's code sees of tracing: run work inside a span that is a
 * child of the active one. With tracing off (the default) it is
 * {@link NO_TRACING}: the work runs as it is, nothing is allocated for spans,
 * and no OpenTelemetry module is even loaded (runtime/telemetry/otel.ts is
 * imported only when AUTHZ_OTEL=1).
 */

/** A span as the code sees it: attributes, and whether it failed. */
export interface SpanHandle {
  setAttributes(attributes: Record<string, string | number | boolean | null | undefined>): void;
}

export interface Tracing {
  readonly enabled: boolean;
  /**
   * Runs `work` in a child span of the active span (a request's, when the
   * request hook started one).
   *
   * @example
   * const row = await tracing.inSpan('store.write', () => writer.write(pending));
   */
  inSpan<T>(name: string, work: (span: SpanHandle) => Promise<T>): Promise<T>;
  /** Exports what is buffered (tests, shutdown). */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

const NOOP_SPAN: SpanHandle = { setAttributes() {} };

/** Tracing off. */
export const NO_TRACING: Tracing = {
  enabled: false,
  inSpan: (_name, work) => work(NOOP_SPAN),
  flush: async () => {},
  shutdown: async () => {},
};
