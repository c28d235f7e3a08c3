/**
 * What every answer must look like, whatever the input: never a 5xx; a
 * `Request-Id` header; an error body of exactly `{ error: { code, message,
 * request_id, details? } }` whose code is a row of the "Error codes" table of
 * docs/errors.md with the status the table gives it.
 */
import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import { documentedErrorTable, readErrorsDoc } from '../../helpers/docs-error-codes.js';

const REQ_ID = /^req_[0-9A-Za-z]+$/;

let table: Map<string, number> | undefined;
export function documentedErrors(): Map<string, number> {
  table ??= documentedErrorTable(readErrorsDoc());
  return table;
}

/** Checks one answer; `what` names the request in failure messages. Returns the error code, if any. */
export function expectContractAnswer(r: LightMyRequestResponse, what: string): string | null {
  const context = `${what} -> ${r.statusCode} ${r.body.slice(0, 400)}`;
  expect(r.statusCode, context).toBeLessThan(500);
  expect(String(r.headers['request-id'] ?? ''), context).toMatch(REQ_ID);
  if (r.statusCode < 400) return null;
  let body: unknown;
  try {
    body = JSON.parse(r.body);
  } catch {
    expect.fail(`error body is not JSON: ${context}`);
  }
  expect(body, context).toBeTypeOf('object');
  expect(Object.keys(body as object), context).toEqual(['error']);
  const error = (body as { error: Record<string, unknown> }).error;
  const keys = Object.keys(error).sort();
  expect(
    keys.filter((k) => k !== 'details'),
    context,
  ).toEqual(['code', 'message', 'request_id']);
  expect(typeof error.code, context).toBe('string');
  expect(typeof error.message, context).toBe('string');
  expect((error.message as string).length, context).toBeGreaterThan(0);
  expect(error.request_id, context).toBe(r.headers['request-id']);
  if ('details' in error) {
    expect(Array.isArray(error.details), context).toBe(true);
    for (const d of error.details as unknown[]) {
      expect(typeof (d as { path?: unknown }).path, context).toBe('string');
      expect(typeof (d as { message?: unknown }).message, context).toBe('string');
    }
  }
  const documented = documentedErrors();
  expect(documented.has(error.code as string), `undocumented error code ${String(error.code)}: ${context}`).toBe(true);
  expect(r.statusCode, `status of ${String(error.code)} differs from the docs/errors.md table: ${context}`).toBe(
    documented.get(error.code as string),
  );
  return error.code as string;
}
