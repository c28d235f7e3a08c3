/**
 * The per-policy work of recompiling a stored set, kept by identity of the stored
 * policy objects: reading (validation and the compiled condition) and the
 * canonical JSON that the set's hash is made of. A change replaces one object and
 * keeps the others, so only the changed policy is read again, and the table is
 * patched for it (compiler/table/patch.ts) rather than built whole.
 *
 * Stored policies were valid when written, so a cached read carries no
 * diagnostics; its origin keeps the path of its first read.
 */
import { createHash } from 'node:crypto';
import {
  compileItemsSteps,
  type Diagnostic,
  canonicalJson,
  canonicalPolicy,
  patchTable,
  readPolicyValue,
  type ReadResult,
  type Policy,
  ROWS_PER_STEP,
  runSteps,
  type DecisionTable,
} from '../../compiler/index.js';
import { runSliced } from '../shared/sliced.js';

export interface StoredCompile {
  table?: DecisionTable;
  diagnostics: Diagnostic[];
}

/** More changed policies than this in one change: the table is built whole (a bundle push, a bulk edit). */
export const PATCH_LIMIT = 64;

/**
 * The policies of `before` missing from `after` and the positions in `after` of
 * those new to it, by object identity, walking both lists side by side (a change
 * keeps the order of the policies it leaves alone). An object met out of place is
 * counted removed and added, which patches to the same table. Null past PATCH_LIMIT.
 *
 * @example
 * changedPolicies([a, b, c], [a, b2, c]); // { removed: [b], added: [1] }
 */
export function changedPolicies(
  before: readonly Policy[],
  after: readonly Policy[],
): { removed: Policy[]; added: number[] } | null {
  const removed: Policy[] = [];
  const added: number[] = [];
  let i = 0;
  let j = 0;
  while (i < before.length || j < after.length) {
    if (removed.length > PATCH_LIMIT || added.length > PATCH_LIMIT) return null;
    const b = before[i];
    const a = after[j];
    if (b !== undefined && b === a) {
      i++;
      j++;
    } else if (a !== undefined && b !== undefined && after[j + 1] === b) added.push(j++);
    else if (b !== undefined && a !== undefined && before[i + 1] === a) removed.push(before[i++]!);
    else {
      if (b !== undefined) removed.push(before[i++]!);
      if (a !== undefined) added.push(j++);
    }
  }
  return removed.length > PATCH_LIMIT || added.length > PATCH_LIMIT ? null : { removed, added };
}

/** Whether two JSON values are equal (objects by their keys, whatever their order). */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  for (const k of ka)
    if (
      !Object.prototype.hasOwnProperty.call(b, k) ||
      !sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])
    )
      return false;
  return true;
}

/**
 * `loaded` (a set read again from the store) with each policy equal to one of
 * `held` replaced by the held object, so that the cache's reads and patching
 * (by object identity) see only the policies that really changed. In slices
 * between the requests being served (comparing 100,000 policies takes a while).
 *
 * @example
 * const policies = await keepUnchanged(current.policies, records.map((r) => r.policy));
 */
export function keepUnchanged(held: readonly Policy[], loaded: readonly Policy[], sliceMs?: number): Promise<Policy[]> {
  return runSliced(keepUnchangedSteps(held, loaded), sliceMs);
}

function* keepUnchangedSteps(held: readonly Policy[], loaded: readonly Policy[]): Generator<void, Policy[]> {
  const byId = new Map<string, Policy>();
  for (let i = 0; i < held.length; i++) {
    byId.set(held[i]!.id, held[i]!);
    if (i % (ROWS_PER_STEP * 4) === ROWS_PER_STEP * 4 - 1) yield;
  }
  const out = new Array<Policy>(loaded.length);
  for (let i = 0; i < loaded.length; i++) {
    const p = loaded[i]!;
    const old = byId.get(p.id);
    out[i] = old !== undefined && sameJson(old, p) ? old : p;
    if (i % ROWS_PER_STEP === ROWS_PER_STEP - 1) yield;
  }
  return out;
}

const byIdOrder = (a: Policy, b: Policy) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * The policies in id order, in steps. Bundles come sorted, and a change leaves a
 * stored set nearly so (a created policy comes last): the ones out of order are
 * set aside, sorted alone and merged back, instead of sorting the whole set.
 */
function* sortedById(policies: readonly Policy[]): Generator<void, readonly Policy[]> {
  const inOrder: Policy[] = [];
  const aside: Policy[] = [];
  for (let i = 0; i < policies.length; i++) {
    const p = policies[i]!;
    if (inOrder.length === 0 || inOrder[inOrder.length - 1]!.id < p.id) inOrder.push(p);
    else aside.push(p);
    if (i % (ROWS_PER_STEP * 16) === ROWS_PER_STEP * 16 - 1) yield;
  }
  if (aside.length === 0) return policies;
  aside.sort(byIdOrder);
  yield;
  const out: Policy[] = new Array(policies.length);
  let a = 0;
  let b = 0;
  for (let k = 0; k < out.length; k++) {
    out[k] = b >= aside.length || (a < inOrder.length && inOrder[a]!.id < aside[b]!.id) ? inOrder[a++]! : aside[b++]!;
    if (k % (ROWS_PER_STEP * 16) === ROWS_PER_STEP * 16 - 1) yield;
  }
  return out;
}

export class PolicyCompileCache {
  private readonly reads = new WeakMap<Policy, ReadResult>();
  private readonly canonical = new WeakMap<Policy, string>();

  /**
   * Takes the reads of policies already checked elsewhere (a loaded bundle's rows:
   * schema, checks and condition done by loadBundle), so that compiling them does
   * not read them again.
   */
  prime(rows: DecisionTable['rows']): void {
    rows.forEach((row, i) => {
      if (!this.reads.has(row.policy))
        this.reads.set(row.policy, {
          items: [{ policy: row.policy, condition: row.conditionAst, origin: { pointer: `/policies/${i}` } }],
          diagnostics: [],
        });
    });
  }

  /** Like compiling the stored set from scratch, reusing each known policy's read. */
  compile(policies: readonly Policy[]): StoredCompile {
    return runSteps(this.compileSteps(policies));
  }

  /** The same, in slices between the requests being served (runtime/shared/sliced.ts). */
  compileSliced(policies: readonly Policy[], sliceMs?: number): Promise<StoredCompile> {
    return runSliced(this.compileSteps(policies), sliceMs);
  }

  private *compileSteps(policies: readonly Policy[]): Generator<void, StoredCompile> {
    const items = [];
    const diagnostics: Diagnostic[] = [];
    for (let i = 0; i < policies.length; i++) {
      const p = policies[i]!;
      let read = this.reads.get(p);
      if (!read) {
        read = readPolicyValue(p, `/policies/${i}`);
        if (read.diagnostics.length === 0) this.reads.set(p, read);
        if (i % ROWS_PER_STEP === ROWS_PER_STEP - 1) yield;
      }
      items.push(...read.items);
      diagnostics.push(...read.diagnostics);
    }
    if (diagnostics.length > 0) return { diagnostics };
    const result = yield* compileItemsSteps(items, { lint: false });
    return result.table ? { table: result.table, diagnostics: [] } : { diagnostics: result.diagnostics };
  }

  /**
   * The table of `next` made by patching `previous.table` for the policies that
   * differ from `previous.policies` (by object identity: a change replaces the
   * objects it changes and keeps the others). Null when patching does not apply
   * (many changes, a duplicate id or name, no rank left): compile whole instead.
   * A changed policy that does not read cleanly gives its diagnostics, as the
   * whole compile would.
   *
   * @example
   * const patched = cache.patch(current, nextPolicies) ?? (await cache.compileSliced(nextPolicies));
   */
  patch(
    previous: { policies: readonly Policy[]; table: DecisionTable },
    next: readonly Policy[],
  ): StoredCompile | null {
    const diff = changedPolicies(previous.policies, next);
    if (diff === null) return null;
    const removeIds = diff.removed.map((p) => p.id);
    const added = [];
    for (const i of diff.added) {
      const p = next[i]!;
      let read = this.reads.get(p);
      if (!read) {
        read = readPolicyValue(p, `/policies/${i}`);
        if (read.diagnostics.length > 0) return { diagnostics: read.diagnostics };
        this.reads.set(p, read);
      }
      added.push(...read.items);
    }
    const table = patchTable(previous.table, removeIds, added);
    return table ? { table, diagnostics: [] } : null;
  }

  /**
   * The set's hash, byte for byte policySetHash (compiler/bundle/write.ts): the
   * canonical JSON of an array is its elements' canonical JSON joined by commas.
   */
  hash(policies: readonly Policy[]): string {
    return runSteps(this.hashSteps(policies));
  }

  /** The same, in slices between the requests being served (a bundle of 100,000 policies). */
  hashSliced(policies: readonly Policy[], sliceMs?: number): Promise<string> {
    return runSliced(this.hashSteps(policies), sliceMs);
  }

  private *hashSteps(policies: readonly Policy[]): Generator<void, string> {
    const ordered = yield* sortedById(policies);
    const hasher = createHash('sha256').update('[');
    // One update per step: far fewer calls into the hash than one per policy.
    const parts: string[] = [];
    for (let i = 0; i < ordered.length; i++) {
      parts.push(this.canonicalOf(ordered[i]!));
      if (i % ROWS_PER_STEP === ROWS_PER_STEP - 1 || i === ordered.length - 1) {
        hasher.update(i < ROWS_PER_STEP ? parts.join(',') : `,${parts.join(',')}`);
        parts.length = 0;
        yield;
      }
    }
    return `sha256:${hasher.update(']').digest('hex')}`;
  }

  /** The policy's canonical JSON (normalised, keys sorted), kept while the policy object lives. */
  canonicalOf(p: Policy): string {
    let text = this.canonical.get(p);
    if (text === undefined) {
      text = canonicalJson(canonicalPolicy(p));
      this.canonical.set(p, text);
    }
    return text;
  }
}
