/**
 * `authz diff OLD NEW [--sample N] [--format text|json]`: a semantic diff of two
 * policy sets, each a bundle (`.json`) or policy files (a YAML file or a folder):
 * the policies added, removed and changed (field by field, old -> new), and the
 * actions whose winning policy changes (compiler/diff/winners.ts defines the
 * winner and the actions probed). Exit 0: no change; 1: changes; 2: usage error
 * (wrong arguments, a missing path, a set that does not compile: its errors are
 * printed on stderr).
 */
import { diffPolicySets, type FieldChange, type PolicySetDiff } from '../diff/policies.js';
import { DEFAULT_SAMPLE, diffWinners, type Winner, type WinnerChange } from '../diff/winners.js';
import type { Policy } from '../policy/types.js';
import { renderDiagnostics, type OutputFormat } from './diagnostics-format.js';
import { EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, UsageError, type CliIo } from './io.js';
import { loadPolicySet, type LoadedSet } from './load-table.js';

export interface DiffOptions {
  paths: string[];
  sample?: string;
  format: OutputFormat;
}

export interface SetDiff {
  policies: PolicySetDiff;
  winners: { probed: number; changes: WinnerChange[] };
}

export function runDiff(options: DiffOptions, io: CliIo): number {
  if (options.paths.length !== 2)
    throw new UsageError(`two policy sets expected, OLD and NEW (got ${options.paths.length})`);
  if (options.format === 'github') throw new UsageError('--format must be text or json');
  const sample = options.sample === undefined ? DEFAULT_SAMPLE : Number(options.sample);
  if (!Number.isInteger(sample) || sample < 1)
    throw new UsageError(`--sample must be a whole number >= 1, not ${options.sample}`);
  const [oldPath, newPath] = options.paths as [string, string];
  const before = loadPolicySet(oldPath, io.cwd);
  const after = loadPolicySet(newPath, io.cwd);
  if (!before.ok || !after.ok) {
    for (const [path, set] of [
      [oldPath, before],
      [newPath, after],
    ] as Array<[string, LoadedSet]>) {
      if (set.ok) continue;
      io.err(`authz diff: ${path} does not compile:`);
      for (const line of renderDiagnostics(set.diagnostics, 'text', false, set.sources)) io.err(`  ${line}`);
    }
    return EXIT_USAGE;
  }
  const diff: SetDiff = {
    policies: diffPolicySets(before.table, after.table),
    winners: diffWinners(before.table, after.table, sample),
  };
  const { added, removed, changed } = diff.policies;
  const anyChange = added.length + removed.length + changed.length + diff.winners.changes.length > 0;
  if (options.format === 'json') {
    io.out(
      JSON.stringify(
        { changed: anyChange, old: oldPath, new: newPath, policies: diff.policies, winners: diff.winners },
        null,
        2,
      ),
    );
  } else {
    for (const line of renderDiff(diff, oldPath, newPath)) io.out(line);
  }
  return anyChange ? EXIT_PROBLEMS : EXIT_OK;
}

const show = (v: unknown) =>
  v === null ? '(none)' : typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v).replace(/,/g, ', ');

function summary(p: Policy): string {
  return `${p.state === 'enabled' ? '' : `${p.state}, `}${p.effect}, priority ${p.priority}, actions [${p.actions.join(', ')}]`;
}

function fieldLine(f: FieldChange): string {
  return `      ${f.field}: ${show(f.old)} -> ${show(f.new)}`;
}

function winner(w: Winner | null): string {
  return w === null ? '(none: no enabled policy)' : `${w.policy_id} (${w.effect}, priority ${w.priority})`;
}

/**
 * The policies half of a diff as text (`authz diff`, and `authz push` before it
 * pushes): a count line naming `what`, then `+ id (summary)`, `- id (summary)`
 * and `~ id` with a line per changed field.
 *
 * @example
 * ```ts
 * import { compileItems, diffPolicySets, readPolicyValue, renderPolicyChanges } from 'agent-authz/compiler';
 *
 * const table = (...values) => compileItems(values.flatMap((v) => readPolicyValue(v).items)).table;
 * const before = table({ id: 'pol_a', effect: 'allow', actions: ['orders.read'] }, { id: 'pol_b', effect: 'deny', actions: ['*.delete'] });
 * const after = table({ id: 'pol_a', effect: 'allow', actions: ['orders.read'], priority: 5 });
 * for (const line of renderPolicyChanges(diffPolicySets(before, after), 'live -> bundle.json')) console.log(line);
 * // => policies: 0 added, 1 removed, 1 changed (live -> bundle.json)
 * // =>   - pol_b (deny, priority 100, actions [*.delete])
 * // =>   ~ pol_a
 * // =>       priority: 100 -> 5
 * ```
 */
export function renderPolicyChanges(policies: PolicySetDiff, what: string): string[] {
  const { added, removed, changed } = policies;
  if (added.length + removed.length + changed.length === 0) return [`policies: no change (${what})`];
  const out = [`policies: ${added.length} added, ${removed.length} removed, ${changed.length} changed (${what})`];
  for (const p of added) out.push(`  + ${p.id} (${summary(p)})`);
  for (const p of removed) out.push(`  - ${p.id} (${summary(p)})`);
  for (const c of changed) {
    out.push(`  ~ ${c.id}`);
    for (const f of c.fields) out.push(fieldLine(f));
  }
  return out;
}

/** The text report of a diff. */
export function renderDiff(diff: SetDiff, oldPath: string, newPath: string): string[] {
  const out = renderPolicyChanges(diff.policies, `${oldPath} -> ${newPath}`);
  const { probed, changes } = diff.winners;
  out.push(
    `winning policy by action (any agent, any resource, conditions taken as met; ${probed} action${probed === 1 ? '' : 's'} probed): ${changes.length === 0 ? 'no change' : `${changes.length} changed`}`,
  );
  for (const c of changes)
    out.push(`  ${c.action}: ${winner(c.old)} -> ${winner(c.new)}  [from ${c.patterns.join(', ')}]`);
  return out;
}
