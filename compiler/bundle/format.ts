/** The bundle artifact written by `authz compile` and loaded by the runtime. */
import type { HistoryProbe } from '../history/probe.js';
import type { Policy } from '../policy/types.js';

export const BUNDLE_FORMAT = 'agent-authz.bundle';
export const BUNDLE_FORMAT_VERSION = 1;

/** A glob of a row: [row index, position of the glob in the policy's `agents`]. */
export type SerializedGlobRef = [number, number];

/** Row indexes (positions in `table.rows`) of one action-trie leaf, by agent. */
export interface SerializedLeaf {
  exact: Record<string, number[]>;
  /** Globs by their literal prefix. */
  prefixed: Record<string, SerializedGlobRef[]>;
  /** Globs with no literal prefix, by their literal suffix. */
  suffixed: Record<string, SerializedGlobRef[]>;
  /** Other globs. */
  globs: SerializedGlobRef[];
  any: number[];
}

export interface SerializedVerbNode {
  exact: Record<string, SerializedLeaf>;
  wildcard: SerializedLeaf | null;
}

export interface SerializedTable {
  /** Positions in `policies`, in rank order (row i decides before row i + 1). */
  rows: number[];
  actions: {
    exact: Record<string, SerializedVerbNode>;
    wildcard: SerializedVerbNode | null;
  };
}

export interface Bundle {
  format: typeof BUNDLE_FORMAT;
  format_version: number;
  /** `sha256:` + hex SHA-256 of the canonical JSON of `policies`. */
  hash: string;
  compiler: string;
  /** Normalised policies, sorted by id. */
  policies: Policy[];
  /**
   * The history probes each policy reads, by policy id (only policies that
   * read history); absent when none does, and in bundles written before history.
   */
  probes?: Record<string, HistoryProbe[]>;
  table: SerializedTable;
}
