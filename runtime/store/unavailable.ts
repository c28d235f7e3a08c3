/**
 * Whether an error means the store itself is not available (as opposed to a
 * query that is wrong): the connection failed or dropped, the server is shutting
 * down, refuses connections or is out of them. Such errors become 503
 * service.unavailable (http/error-handler.ts), never a 500 and never a decision.
 */
import { isTransientStoreError } from './transient.js';

/** SQLSTATEs a connection attempt meets when the database refuses it: 55000 "not currently accepting connections", 3D000 no such database, 28xxx authentication. */
const REFUSED_SQLSTATE = /^(55000|3D000|28...)$/;

export function isStoreUnavailable(error: unknown): boolean {
  if (isTransientStoreError(error)) return true;
  if (typeof error !== 'object' || error === null) return false;
  const { code, severity } = error as { code?: unknown; severity?: unknown };
  // FATAL / PANIC: the server ended the session.
  if (severity === 'FATAL' || severity === 'PANIC') return true;
  return typeof code === 'string' && REFUSED_SQLSTATE.test(code);
}
