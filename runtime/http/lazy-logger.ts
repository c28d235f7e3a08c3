/**
 * Request loggers made only when a line is written. Fastify gives every request
 * a child of the service's logger (bound to its `reqId`); pino makes a child by
 * serializing and redacting its bindings, a few microseconds per request. At the
 * quiet default level (`warn`) almost no request writes a line, so the child is
 * made on the first line of an enabled level instead, with the same bindings
 * and options: the lines are the same as before.
 */
import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify';

type Bindings = Record<string, unknown>;
type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
type LogFn = (...args: unknown[]) => void;
type ChildOptions = Parameters<FastifyBaseLogger['child']>[1];

/** Whether `logger` writes lines of `level` (a logger that cannot say: yes). */
function enabled(logger: FastifyBaseLogger, level: string): boolean {
  const check = (logger as { isLevelEnabled?: (level: string) => boolean }).isLevelEnabled;
  return typeof check === 'function' ? check.call(logger, level) : true;
}

/** A request's logger: the parent's child, made when first needed. */
class LazyChild {
  private made: FastifyBaseLogger | null = null;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildOptions,
  ) {}

  get level(): string {
    return this.made?.level ?? this.parent.level;
  }

  set level(level: string) {
    this.real().level = level;
  }

  /** The child logger itself (made now if it was not yet). */
  real(): FastifyBaseLogger {
    this.made ??= this.parent.child(this.bindings, this.options);
    return this.made;
  }

  isLevelEnabled(level: string): boolean {
    return enabled(this.made ?? this.parent, level);
  }

  child(bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
    return this.real().child(bindings, options);
  }

  fatal(...args: unknown[]): void {
    this.write('fatal', args);
  }

  error(...args: unknown[]): void {
    this.write('error', args);
  }

  warn(...args: unknown[]): void {
    this.write('warn', args);
  }

  info(...args: unknown[]): void {
    this.write('info', args);
  }

  debug(...args: unknown[]): void {
    this.write('debug', args);
  }

  trace(...args: unknown[]): void {
    this.write('trace', args);
  }

  silent(): void {}

  private write(level: Level, args: unknown[]): void {
    if (this.made === null && !enabled(this.parent, level)) return;
    (this.real()[level] as LogFn)(...args);
  }
}

/**
 * Fastify's `childLoggerFactory` with a child made on its first written line.
 *
 * @example
 * Fastify({ logger: loggerOptions({ level: 'warn' }), childLoggerFactory: lazyChildLogger });
 */
export const lazyChildLogger: NonNullable<FastifyServerOptions['childLoggerFactory']> = (logger, bindings, options) =>
  new LazyChild(logger, bindings, options) as unknown as FastifyBaseLogger;
