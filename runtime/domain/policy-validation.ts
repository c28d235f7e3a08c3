/**
 * POST /v1/policies/validate: what the compiler says of one policy in its
 * environment, storing nothing. Errors of the policy itself (YAML syntax,
 * schema, action patterns, conditions, currencies), a name another policy of
 * the environment has, and the compiler's warnings (lints: shadowed, conflict,
 * never matches) of the environment's set with this policy in it that concern
 * this policy. A policy whose id is in the environment is checked as its
 * replacement (what PUT would store), any other as a new policy (POST).
 */
import {
  compileItemsSteps,
  type Diagnostic,
  type Severity,
  type ReadPolicy,
  type SourceLocator,
  type Policy,
} from '../../compiler/index.js';
import { positionIn, readBodyPolicy, type PolicyInput } from './policy-input.js';
import type { CompiledSet } from './policy-sets.js';
import { runSliced } from '../shared/sliced.js';

/** What the compiler says of one policy in its environment. Its public form: presenters/policy-validation.ts. */
export interface PolicyValidation {
  /** No errors (warnings allowed): POST or PUT would accept it. */
  valid: boolean;
  /** Errors first, then by place and message. */
  diagnostics: Diagnostic[];
}

/** Names are unique per environment: the problem of the body's /name, or null. */
export function nameClash(current: readonly Policy[], policy: Policy, locator?: SourceLocator): Diagnostic | null {
  const holder = current.find((c) => c.id !== policy.id && c.name === policy.name);
  if (!holder) return null;
  return {
    severity: 'error',
    code: 'policy.duplicate_name',
    message: `duplicate policy name "${policy.name}" (policy ${holder.id} has it); names are unique per environment`,
    path: '/name',
    ...positionIn(locator, '/name'),
  };
}

/** Whether `text` names the policy id (ids are [A-Za-z0-9_], so a neighbour of another class ends it). */
function mentions(text: string, id: string): boolean {
  for (let at = text.indexOf(id); at !== -1; at = text.indexOf(id, at + 1)) {
    const before = text[at - 1];
    const after = text[at + id.length];
    if ((before === undefined || !/[A-Za-z0-9_]/.test(before)) && (after === undefined || !/[A-Za-z0-9_]/.test(after)))
      return true;
  }
  return false;
}

/**
 * Compiles the environment's set with `mine` in it (replacing the policy of the
 * same id) with the lints on, in slices (decisions keep being served), and
 * keeps what concerns `mine`: its own diagnostics, and lints of another policy
 * that name it (e.g. another policy that `mine` shadows), placed at its root.
 */
async function inEnvironment(
  set: CompiledSet,
  mine: ReadPolicy,
  retentionDays: number | null | undefined,
): Promise<Diagnostic[]> {
  const items: ReadPolicy[] = [];
  set.policies.forEach((policy, i) => {
    if (policy.id === mine.policy.id) return;
    items.push({
      policy,
      condition: set.table.byId.get(policy.id)?.conditionAst ?? null,
      origin: { pointer: `/policies/${i}` },
    });
  });
  items.push(mine);
  // The retention is known here: a history window beyond it is a lint (lint.history_beyond_retention).
  const result = await runSliced(compileItemsSteps(items, { lint: true, retentionDays }));
  const root = mine.origin.line !== undefined ? { line: mine.origin.line, col: mine.origin.col ?? 1 } : {};
  // Lints name a policy's place as "(file:line)"; a body's file name is internal (never shown by the API).
  const place = mine.origin.file !== undefined ? ` (${mine.origin.file}:${mine.origin.line})` : undefined;
  const shown = (message: string) => (place === undefined ? message : message.replaceAll(place, ''));
  const out: Diagnostic[] = [];
  for (const d of result.diagnostics) {
    const others = d.path?.startsWith('/policies/') ?? false;
    if (!others) out.push({ ...d, message: shown(d.message) });
    else if (d.severity === 'warning' && mentions(d.message, mine.policy.id))
      out.push({ severity: d.severity, code: d.code, message: shown(d.message), path: '/', ...root });
  }
  return out;
}

/**
 * The lints (warnings: lint.conflict, lint.shadowed, ...) of a policy now in
 * `set`, as POST /v1/policies/validate reports them: POST /v1/policies answers
 * them beside the created policy. `locator` places them in a YAML body.
 */
export async function lintsOf(
  set: CompiledSet,
  id: string,
  retentionDays: number | null | undefined,
  locator?: SourceLocator,
): Promise<Diagnostic[]> {
  const policy = set.policies.find((p) => p.id === id);
  if (!policy) return [];
  const pos = locator?.value('');
  const mine: ReadPolicy = {
    policy,
    condition: set.table.byId.get(id)?.conditionAst ?? null,
    origin: { pointer: '', ...(locator && pos ? { file: locator.file, line: pos.line, col: pos.col, locator } : {}) },
  };
  return (await inEnvironment(set, mine, retentionDays)).filter((d) => d.severity === 'warning');
}

export async function validatePolicy(
  set: CompiledSet,
  input: PolicyInput,
  nowMs: number,
  retentionDays?: number | null,
): Promise<PolicyValidation> {
  const { item, diagnostics } = readBodyPolicy(input, nowMs);
  if (item) {
    const clash = nameClash(set.policies, item.policy, input.locator);
    // As the compiler: lints run on a set without errors.
    if (clash) diagnostics.push(clash);
    else diagnostics.push(...(await inEnvironment(set, item, retentionDays)));
  }
  const rank = (s: Severity) => (s === 'error' ? 0 : 1);
  const sorted = [...diagnostics].sort(
    (a, b) =>
      rank(a.severity) - rank(b.severity) ||
      (a.line ?? 0) - (b.line ?? 0) ||
      (a.col ?? 0) - (b.col ?? 0) ||
      a.message.localeCompare(b.message),
  );
  return { valid: !diagnostics.some((d) => d.severity === 'error'), diagnostics: sorted };
}
