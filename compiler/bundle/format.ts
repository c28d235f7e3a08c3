/** The bundle artifact written by `authz compile` and loaded by the runtime. */
import type { Policy } from '../policy/types.js';

export const BUNDLE_FORMAT = 'agent-authz.bundle';
export const BUNDLE_FORMAT_VERSION = 1;

/** Row indexes (positions in `table.rows`) of one action-trie leaf, by agent. */
export interface SerializedLeaf {
  exact: Record<string, number[]>;
  globs: number[];
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
  table: SerializedTable;
}
