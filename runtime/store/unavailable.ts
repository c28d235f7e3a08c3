/**
 * Whether an error means the store itself is not available (as opposed to a
 * query that is wrong): the connection failed or dropped, the server is shutting
 * down, refuses connections or is out of them, or it is not (any longer) a
 * primary that takes writes (a standby, or a primary demoted by a failover:
 * 25006 read_only_sql_transaction). Such errors become 503 service.unavailable
 * with Retry-After (http/error-handler.ts), never a 500 and never a decision.
 * An error wrapping another (`cause`, AggregateError) is judged by what it wraps.
 *
 * @example
 * isStoreUnavailable(Object.assign(new Error('read-only'), { code: '25006' })) // => true
 * isStoreUnavailable(new Error('x', { cause: Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }) })) // => true
 * isStoreUnavailable(Object.assign(new Error('syntax'), { code: '42601' })) // => false
 */
import { isTransientStoreError } from './transient.js';

/**
 * SQLSTATEs a connection attempt or a write meets when there is no usable
 * primary: 55000 "not currently accepting connections", 3D000 no such database,
 * 28xxx authentication, 25006 read-only transaction (a standby, or a demoted primary).
 */
const REFUSED_SQLSTATE = /^(55000|3D000|28...|25006)$/;

/** How deep `cause` chains are followed (a cycle ends there too). */
const MAX_DEPTH = 5;

export function isStoreUnavailable(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > MAX_DEPTH) return false;
  if (isTransientStoreError(error)) return true;
  const { code, severity, cause, errors } = error as {
    code?: unknown;
    severity?: unknown;
    cause?: unknown;
    errors?: unknown;
  };
  // FATAL / PANIC: the server ended the session.
  if (severity === 'FATAL' || severity === 'PANIC') return true;
  if (typeof code === 'string' && REFUSED_SQLSTATE.test(code)) return true;
  if (cause !== undefined && isStoreUnavailable(cause, depth + 1)) return true;
  return Array.isArray(errors) && errors.length > 0 && errors.every((e) => isStoreUnavailable(e, depth + 1));
}
