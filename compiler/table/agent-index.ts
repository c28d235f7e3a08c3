/**
 * The rows of one action-trie leaf, indexed by agent, so that a lookup does not
 * grow with the number of rows for other agents:
 * - exact agent ids in a map;
 * - globs with a literal prefix (`support-*`, `agent-0001*`) in a map keyed by
 *   that prefix, probed once per distinct prefix length;
 * - globs with no literal prefix but a literal suffix (`*-bot`) likewise by suffix;
 * - rows for every agent (no filter, or `*`) in a list;
 * - what remains (`*x*`) in a list tested one by one.
 * Every list is kept in row order; a row may be reached more than once (several
 * patterns), which the caller's sort-unique removes.
 */
import { globMatches, isWildcardOnly, type CompiledGlob } from '../patterns/glob.js';
import type { PolicyRow } from './rows.js';

export interface GlobEntry {
  readonly row: PolicyRow;
  readonly glob: CompiledGlob;
}

/** Globs keyed by a literal affix, with the distinct affix lengths to probe. */
export interface AffixIndex {
  readonly byAffix: Map<string, GlobEntry[]>;
  /** Distinct affix lengths present, ascending. */
  readonly lengths: number[];
  /** `byAffix` split for lookups (derived on first use; dropped when an entry is added). */
  buckets: Map<string, AffixBucket> | undefined;
}

/**
 * One affix's entries for lookups: the rows whose glob is the affix and a star
 * alone (`agent-0001*`, `*-bot`), which a probe that found the affix matches
 * without testing, and the other entries, tested one by one.
 */
export interface AffixBucket {
  readonly sure: PolicyRow[];
  readonly tested: GlobEntry[];
}

function bucketsOf(index: AffixIndex, prefix: boolean): Map<string, AffixBucket> {
  const buckets = new Map<string, AffixBucket>();
  for (const [affix, entries] of index.byAffix) {
    const bucket: AffixBucket = { sure: [], tested: [] };
    for (const entry of entries) {
      const g = entry.glob;
      if (g.middles.length === 0 && (prefix ? g.suffix === '' : g.prefix === '')) bucket.sure.push(entry.row);
      else bucket.tested.push(entry);
    }
    buckets.set(affix, bucket);
  }
  return buckets;
}

export interface AgentIndex {
  readonly exact: Map<string, PolicyRow[]>;
  readonly prefixed: AffixIndex;
  readonly suffixed: AffixIndex;
  readonly globs: GlobEntry[];
  readonly any: PolicyRow[];
  /** `any` grouped by resource patterns (derived on first use). */
  anyGroups: ResourceGroup[] | undefined;
}

/**
 * Rows for every agent that share the same resource patterns: when the request's
 * resource matches none of them, the whole group drops out at once, its counts
 * added to the tally (guardrails such as "nobody touches secret:*" in a namespace
 * are many rows with one pattern).
 */
export interface ResourceGroup {
  readonly resources: readonly CompiledGlob[] | null;
  readonly rows: PolicyRow[];
  enabled: number;
  disabled: number;
  allowEnabled: number;
}

/** What rows skipped by a group would have counted in `decide`. */
export interface Tally {
  enabled: number;
  disabled: number;
  allowCandidates: number;
  allowResourceDrops: number;
}

export interface CandidateFilter {
  resource: string | null | undefined;
  tally: Tally;
}

function groupByResources(rows: readonly PolicyRow[]): ResourceGroup[] {
  const groups = new Map<string, ResourceGroup>();
  for (const row of rows) {
    const key = row.resources === null ? '' : JSON.stringify(row.policy.resources);
    let group = groups.get(key);
    if (!group)
      groups.set(key, (group = { resources: row.resources, rows: [], enabled: 0, disabled: 0, allowEnabled: 0 }));
    group.rows.push(row);
    if (!row.enabled) group.disabled++;
    else {
      group.enabled++;
      if (row.isAllow) group.allowEnabled++;
    }
  }
  return [...groups.values()];
}

function resourceMatchesAny(globs: readonly CompiledGlob[], resource: string | null | undefined): boolean {
  if (resource === undefined || resource === null) return false;
  for (let i = 0; i < globs.length; i++) if (globMatches(globs[i]!, resource)) return true;
  return false;
}

function emptyAffixIndex(): AffixIndex {
  return { byAffix: new Map(), lengths: [], buckets: undefined };
}

export function emptyAgentIndex(): AgentIndex {
  // anyGroups present from the start: every leaf has one object shape (one hidden class on the hot path).
  return {
    exact: new Map(),
    prefixed: emptyAffixIndex(),
    suffixed: emptyAffixIndex(),
    globs: [],
    any: [],
    anyGroups: undefined,
  };
}

function addAffix(index: AffixIndex, affix: string, entry: GlobEntry): void {
  index.buckets = undefined;
  const list = index.byAffix.get(affix);
  if (list) list.push(entry);
  else {
    index.byAffix.set(affix, [entry]);
    if (!index.lengths.includes(affix.length)) {
      index.lengths.push(affix.length);
      index.lengths.sort((a, b) => a - b);
    }
  }
}

function pushOnce(list: PolicyRow[], row: PolicyRow): void {
  if (list[list.length - 1] !== row) list.push(row);
}

/** Adds a row (rows must be added in row order so the lists stay sorted). */
export function addToAgentIndex(index: AgentIndex, row: PolicyRow): void {
  if (row.agents === null || row.agents.some((g) => isWildcardOnly(g.source))) {
    index.any.push(row);
    return;
  }
  for (const glob of row.agents) {
    if (glob.exact !== undefined) {
      const list = index.exact.get(glob.exact);
      if (list === undefined) index.exact.set(glob.exact, [row]);
      else pushOnce(list, row);
    } else if (glob.prefix.length > 0) addAffix(index.prefixed, glob.prefix, { row, glob });
    else if (glob.suffix.length > 0) addAffix(index.suffixed, glob.suffix, { row, glob });
    else index.globs.push({ row, glob });
  }
}

/**
 * Appends to `out` the rows of this leaf that apply to `agentId` (may repeat a
 * row). With a filter, groups of every-agent rows whose resources cannot match
 * are not appended but counted into the filter's tally.
 */
export function collectForAgent(index: AgentIndex, agentId: string, out: PolicyRow[], filter?: CandidateFilter): void {
  const exact = index.exact.get(agentId);
  if (exact !== undefined) for (let i = 0; i < exact.length; i++) out.push(exact[i]!);
  if (index.prefixed.lengths.length > 0) collectAffix(index.prefixed, agentId, true, out);
  if (index.suffixed.lengths.length > 0) collectAffix(index.suffixed, agentId, false, out);
  for (let i = 0; i < index.globs.length; i++) {
    const entry = index.globs[i]!;
    if (globMatches(entry.glob, agentId)) out.push(entry.row);
  }
  if (filter === undefined || index.any.length < 2) {
    for (let i = 0; i < index.any.length; i++) out.push(index.any[i]!);
    return;
  }
  const groups = (index.anyGroups ??= groupByResources(index.any));
  for (let i = 0; i < groups.length; i++) {
    const group = groups[i]!;
    if (group.resources === null || resourceMatchesAny(group.resources, filter.resource)) {
      for (let j = 0; j < group.rows.length; j++) out.push(group.rows[j]!);
    } else {
      const t = filter.tally;
      t.enabled += group.enabled;
      t.disabled += group.disabled;
      t.allowCandidates += group.allowEnabled;
      t.allowResourceDrops += group.allowEnabled;
    }
  }
}

function collectAffix(index: AffixIndex, agentId: string, prefix: boolean, out: PolicyRow[]): void {
  const lengths = index.lengths;
  const buckets = (index.buckets ??= bucketsOf(index, prefix));
  for (let i = 0; i < lengths.length; i++) {
    const len = lengths[i]!;
    if (len > agentId.length) break;
    const bucket = buckets.get(prefix ? agentId.slice(0, len) : agentId.slice(agentId.length - len));
    if (bucket === undefined) continue;
    // The affix matched: `affix*` globs match without a test (nor a look at the glob).
    const sure = bucket.sure;
    for (let j = 0; j < sure.length; j++) out.push(sure[j]!);
    const tested = bucket.tested;
    for (let j = 0; j < tested.length; j++) {
      const entry = tested[j]!;
      if (globMatches(entry.glob, agentId)) out.push(entry.row);
    }
  }
}
