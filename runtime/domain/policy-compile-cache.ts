/**
 * The per-policy work of recompiling a stored set, kept by identity of the stored
 * policy objects: reading (validation and the compiled condition) and the
 * canonical JSON that the set's hash is made of. A change replaces one object and
 * keeps the others, so only the changed policy is read again; the table itself is
 * still built whole (compiler/table/build.ts).
 *
 * Stored policies were valid when written, so a cached read carries no
 * diagnostics; its origin keeps the path of its first read.
 */
import { compileItemsSteps, type Diagnostic, canonicalJson, sha256Hex, canonicalPolicy, readPolicyValue, type ReadResult, type Policy, ROWS_PER_STEP, runSteps, type DecisionTable } from '../../compiler/index.js';
import { runSliced } from '../shared/sliced.js';

export interface StoredCompile {
  table?: DecisionTable;
  diagnostics: Diagnostic[];
}

export class PolicyCompileCache {
  private readonly reads = new WeakMap<Policy, ReadResult>();
  private readonly canonical = new WeakMap<Policy, string>();

  /** Like compiling the stored set from scratch, reusing each known policy's read. */
  compile(policies: readonly Policy[]): StoredCompile {
    return runSteps(this.compileSteps(policies));
  }

  /** The same, in slices between the requests being served (runtime/engine/sliced.ts). */
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
   * The set's hash, byte for byte policySetHash (compiler/bundle/write.ts): the
   * canonical JSON of an array is its elements' canonical JSON joined by commas.
   */
  hash(policies: readonly Policy[]): string {
    const sorted = [...policies].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const parts = sorted.map((p) => {
      let text = this.canonical.get(p);
      if (text === undefined) {
        text = canonicalJson(canonicalPolicy(p));
        this.canonical.set(p, text);
      }
      return text;
    });
    return `sha256:${sha256Hex(`[${parts.join(',')}]`)}`;
  }
}
