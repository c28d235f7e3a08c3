/**
 * The documentation covers every error code: each `code` of ERROR_CLASSES
 * (runtime/errors/api-error.ts) has a row with its HTTP status in the "Error
 * codes" table of docs/errors.md, and it and each code of the service
 * interface's error table (its section 7, copied below) appear inside backticks
 * in README.md or docs/*.md.
 */
import { describe, expect, it } from 'vitest';
import { ERROR_CLASSES } from '../../runtime/errors/api-error.js';
import { backtickedTokens, documentedErrorTable, readAllDocs, readErrorsDoc } from '../helpers/docs-error-codes.js';

/** The codes of the service interface's section 7 (its error table), in table order. */
const SERVICE_INTERFACE_CODES = [
  'auth.invalid_key',
  'auth.expired',
  'auth.signature_invalid',
  'auth.scope_insufficient',
  'policy.not_found',
  'policy.conflict',
  'policy.disabled',
  'rate_limit.exceeded',
  'budget.exceeded',
  'budget.below_threshold',
  'resource.not_allowed',
  'decision.already_confirmed',
  'decision.expired',
  'decision.not_found',
  'validation.missing_field',
  'validation.invalid_action',
] as const;

describe('documented error codes (README.md, docs/*.md)', () => {
  const documented = backtickedTokens(readAllDocs());
  const runtimeCodes = [...new Set(ERROR_CLASSES.map((c) => c.code))];

  it('the helper finds codes in backticks and nowhere else', () => {
    const sample =
      'A `auth.invalid_key` here, `policy.conflict (200)` there, plain decision.expired, and\n```\nerror: validation.invalid_json\n```\n';
    const found = backtickedTokens(sample);
    expect(found.has('auth.invalid_key')).toBe(true);
    expect(found.has('policy.conflict')).toBe(true);
    expect(found.has('validation.invalid_json')).toBe(true);
    expect(found.has('decision.expired')).toBe(false);
  });

  it('ERROR_CLASSES has a code for every class and no duplicates', () => {
    expect(runtimeCodes.length).toBe(ERROR_CLASSES.length);
    for (const code of runtimeCodes) expect(code).toMatch(/^[a-z_]+\.[a-z_]+$/);
  });

  it('documents every runtime error code (ERROR_CLASSES) in backticks', () => {
    const missing = runtimeCodes.filter((c) => !documented.has(c));
    expect(
      missing,
      `README.md and docs/*.md lack these runtime error codes in backticks: ${missing.join(', ')}`,
    ).toEqual([]);
  });

  it('the "Error codes" table has a row for every runtime error code, with its HTTP status', () => {
    const table = documentedErrorTable(readErrorsDoc());
    const wrong = ERROR_CLASSES.filter((c) => table.get(c.code) !== c.status).map(
      (c) => `${c.code} ${c.status} (docs/errors.md: ${table.get(c.code) ?? 'no row'})`,
    );
    expect(wrong, 'docs/errors.md "Error codes" table rows missing or with another status').toEqual([]);
  });

  it('the "Error codes" table has no row for a code the service never answers', () => {
    const known = new Set<string>(runtimeCodes);
    const stale = [...documentedErrorTable(readErrorsDoc()).keys()].filter((code) => !known.has(code));
    expect(stale, 'docs/errors.md "Error codes" rows with no error class').toEqual([]);
  });

  it("documents every error code of the service interface's error table in backticks", () => {
    const missing = SERVICE_INTERFACE_CODES.filter((c) => !documented.has(c));
    expect(
      missing,
      `README.md and docs/*.md lack these error codes of the service interface in backticks: ${missing.join(', ')}`,
    ).toEqual([]);
  });
});
