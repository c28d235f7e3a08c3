/**
 * A decision table row: one policy with its patterns compiled, numbered in the
 * order decisions rank them (priority ascending; at equal priority deny, review,
 * allow; then id), so the first surviving row of a request is the winner.
 */
import { compileGlob, globMatches, type CompiledGlob } from '../patterns/glob.js';
import { compileCondition, conditionProbes, readsSessionLabels, type ConditionAst } from '../condition/index.js';
import type { HistoryProbe } from '../history/probe.js';
import type { EvaluationInput, Effect, Policy } from '../policy/types.js';
import { actionPatternMatches } from '../patterns/action.js';

export interface PolicyRow {
  /** Rank of the row: lower decides first. */
  readonly index: number;
  readonly policy: Policy;
  readonly enabled: boolean;
  /** Copied from the policy so the hot path reads one object shape. */
  readonly isAllow: boolean;
  /** Copied from the policy: deciding reads the rows, not the policies they point to. */
  readonly effect: Effect;
  readonly id: string;
  /** Agent globs; null = every agent. */
  readonly agents: readonly CompiledGlob[] | null;
  /** Resource globs; null = any resource (or none). */
  readonly resources: readonly CompiledGlob[] | null;
  readonly conditionAst: ConditionAst | null;
  readonly condition: ((request: EvaluationInput) => boolean) | null;
  /** The history probes its condition reads, unique by key (empty for most rows). */
  readonly probes: readonly HistoryProbe[];
  /** Its condition reads `session.labels`. */
  readonly readsLabels: boolean;
}

const NO_PROBES: readonly HistoryProbe[] = Object.freeze([]);

export const EFFECT_RANK: Record<Effect, number> = { deny: 0, review: 1, allow: 2 };

/** The order rows are ranked in: priority, then deny > review > allow, then id. */
export function comparePolicies(a: Policy, b: Policy): number {
  return (
    a.priority - b.priority || EFFECT_RANK[a.effect] - EFFECT_RANK[b.effect] || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  );
}

type CompiledParts = Pick<PolicyRow, 'agents' | 'resources' | 'conditionAst' | 'condition' | 'probes' | 'readsLabels'>;

/**
 * A row's compiled patterns and condition depend only on its policy object and
 * parsed condition (both treated as immutable): a service that rebuilds its table
 * after a change, from the same objects, reuses them instead of compiling again.
 */
const compiledParts = new WeakMap<Policy, CompiledParts>();

/**
 * Compiled pattern lists shared by every row with the same patterns, so that
 * `decide` can check a resource once for a run of rows that share them (guardrails
 * are often many rows with one resource pattern). Bounded: cleared past a size.
 */
const sharedGlobLists = new Map<string, readonly CompiledGlob[]>();
const SHARED_GLOB_LISTS_MAX = 50_000;

function globList(patterns: readonly string[]): readonly CompiledGlob[] {
  const key = patterns.length === 1 ? patterns[0]! : patterns.join('\u0000');
  let list = sharedGlobLists.get(key);
  if (list === undefined) {
    if (sharedGlobLists.size >= SHARED_GLOB_LISTS_MAX) sharedGlobLists.clear();
    list = patterns.map(compileGlob);
    sharedGlobLists.set(key, list);
  }
  return list;
}

function partsOf(policy: Policy, conditionAst: ConditionAst | null): CompiledParts {
  let parts = compiledParts.get(policy);
  if (!parts || parts.conditionAst !== conditionAst) {
    parts = {
      agents: policy.agents ? policy.agents.map(compileGlob) : null,
      resources: policy.resources ? globList(policy.resources) : null,
      conditionAst,
      condition: conditionAst ? compileCondition(conditionAst) : null,
      probes: conditionAst ? probesOf(conditionAst) : NO_PROBES,
      readsLabels: conditionAst ? readsSessionLabels(conditionAst) : false,
    };
    compiledParts.set(policy, parts);
  }
  return parts;
}

function probesOf(ast: ConditionAst): readonly HistoryProbe[] {
  const probes = conditionProbes(ast);
  return probes.length === 0 ? NO_PROBES : Object.freeze(probes);
}

export function buildRow(index: number, policy: Policy, conditionAst: ConditionAst | null): PolicyRow {
  const { agents, resources, condition, probes, readsLabels } = partsOf(policy, conditionAst);
  return {
    index,
    policy,
    enabled: policy.state === 'enabled',
    isAllow: policy.effect === 'allow',
    effect: policy.effect,
    id: policy.id,
    agents,
    resources,
    conditionAst,
    condition,
    probes,
    readsLabels,
  };
}

/**
 * The row a shadow policy has in the table's shadow part: the same rank, patterns
 * and condition, but enabled, so that deciding with the enforcement rows plus
 * these gives the outcome "with the shadow policies enabled". Built with the
 * same literal as {@link buildRow}, so both kinds share one object shape.
 */
export function shadowRow(row: PolicyRow): PolicyRow {
  return {
    index: row.index,
    policy: row.policy,
    enabled: true,
    isAllow: row.isAllow,
    effect: row.effect,
    id: row.id,
    agents: row.agents,
    resources: row.resources,
    conditionAst: row.conditionAst,
    condition: row.condition,
    probes: row.probes,
    readsLabels: row.readsLabels,
  };
}

export function agentMatches(row: PolicyRow, agentId: string): boolean {
  if (row.agents === null) return true;
  for (const glob of row.agents) if (globMatches(glob, agentId)) return true;
  return false;
}

export function actionMatches(row: PolicyRow, action: string): boolean {
  for (const pattern of row.policy.actions) if (actionPatternMatches(pattern, action)) return true;
  return false;
}

export function resourceMatches(row: PolicyRow, resource: string | null | undefined): boolean {
  if (row.resources === null) return true;
  if (resource === undefined || resource === null) return false;
  for (const glob of row.resources) if (globMatches(glob, resource)) return true;
  return false;
}

export function conditionHolds(row: PolicyRow, request: EvaluationInput): boolean {
  return row.condition === null || row.condition(request);
}
