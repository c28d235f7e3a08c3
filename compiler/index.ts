/**
 * `agent-authz/compiler`: policy YAML -> validated policies -> decision table ->
 * decisions and bundles. The only door into the compiler for the runtime, the
 * benchmarks, the examples and the docs; this file only re-exports (each
 * function's documentation, with an example, sits on its definition).
 *
 * @example
 * ```ts
 * import { compileSources, evaluate } from 'agent-authz/compiler';
 *
 * const text = 'effect: allow\nname: read-orders\nactions: [orders.read]\n';
 * const { table, diagnostics } = compileSources([{ file: 'p.yaml', text }]);
 * console.log(diagnostics.length); // => 0
 * console.log(evaluate(table, { agent_id: 'bot', action: 'orders.read' }).effect); // => allow
 * ```
 */

// Compiling a policy set.
export { compileSources, compileItems, compileItemsSteps, type CompileOptions, type CompileResult } from './compile.js';

// Policies: their types, reading them from YAML or JSON values, their canonical form.
export {
  BUDGET_SCOPES,
  DEFAULT_APPROVAL_TIMEOUT_SECONDS,
  RATE_WINDOWS,
  budgetScope,
  isHeldUnit,
  type Approval,
  type Budget,
  type BudgetPeriod,
  type BudgetScope,
  type Effect,
  type EvaluationInput,
  type Policy,
  type PolicyState,
  type RateLimit,
  type RateWindow,
} from './policy/types.js';
export {
  readPolicyValue,
  readPolicyDocument,
  readPolicySource,
  type PolicyOrigin,
  type ReadPolicy,
  type ReadResult,
} from './policy/read.js';
export { validatePolicyShape } from './policy/validate.js';
export { MAX_POLICY_BYTES } from './policy/check.js';
export { canonicalPolicy } from './policy/normalize.js';
export { readYaml, type Position, type SourceFile, type SourceLocator, type YamlDocument } from './policy/source.js';
export { readYamlFast } from './policy/fast-source.js';

// The condition language.
export {
  MAX_DEPTH,
  MAX_LENGTH,
  checkCondition,
  compileCondition,
  parseCondition,
  type ConditionAst,
  type ConditionIssue,
} from './condition/index.js';
export type { ParseResult } from './condition/ast.js';

// Action strings and glob patterns.
export { actionPatternMatches, isValidAction } from './patterns/action.js';
export { jsonEqual } from './condition/compile.js';
// Actions from outside names: a name as an action part, and the AuthZEN action rule (shared with the MCP proxy).
export {
  actionPart,
  authzenActionOf,
  AUTHZEN_NAMESPACE,
  MAX_AUTHZEN_ACTION_NAME,
  namespacedActionOf,
} from './patterns/action-names.js';
export { matchGlob } from './patterns/glob.js';

// The decision table: building it, deciding with it, explaining a decision.
export { ROWS_PER_STEP, buildTableSteps, runSteps, type DecisionTable, type ShadowRows } from './table/build.js';
export { patchTable } from './table/patch.js';
export {
  evaluate,
  evaluateLinear,
  evaluateWithShadow,
  type Evaluation,
  type EvaluationReason,
  type EvaluationWarning,
  type ShadowOutcome,
} from './table/evaluate.js';
export { explain, type DropStep, type Explanation, type PolicyTrace } from './table/explain.js';

// Bundles: the compiled artifact, and the canonical JSON its hash is taken over.
export { createBundle, policySetHash } from './bundle/write.js';
export { loadBundle, loadBundleSteps, type LoadedBundle } from './bundle/load.js';
export { BUNDLE_FORMAT, BUNDLE_FORMAT_VERSION, type Bundle } from './bundle/format.js';
export { canonicalJson, sha256Hex } from './bundle/canonical-json.js';

// Diagnostics.
export { hasErrors, type Diagnostic, type Severity } from './diagnostics/diagnostic.js';

// The package: its version, root folder and JSON Schemas.
export { compilerVersion } from './version.js';
export { loadSchema, packageRoot } from './schemas.js';

// The `authz` command line (bin/authz.js) and its file helpers.
export { main } from './cli/main.js';
export { renderPolicyChanges } from './cli/diff.js';
export { diffPolicySets, type PolicySetDiff } from './diff/policies.js';
export { replayCommand } from './cli/replay.js';
export { ReplayHistory } from './replay/history.js';
export { isoInstant } from './time/iso-instant.js';
export {
  HISTORY_FUNCTIONS,
  HISTORY_SCOPES,
  MAX_HISTORY_WINDOW_SECONDS,
  durationSeconds,
  historyProbe,
  probeText,
  windowSeconds,
  type HistoryFunction,
  type HistoryMeasure,
  type HistoryProbe,
  type HistoryScope,
  type HistoryValues,
} from './history/probe.js';
export { historyProbesFor, historyReadings, tableHistoryProbes, type HistoryReading } from './history/probes-of.js';
export { historyValueOf, historyValuesOf, type EarlierDecision } from './history/reference.js';
export { earlierDecisionsOf, requestWithHistory, TEST_NOW_MS, type TestHistoryEntry } from './testing/history.js';
export { conditionProbes } from './condition/index.js';
export { EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, processIo, UsageError, wantsHelp, type CliIo } from './cli/io.js';
export { closest, didYouMean, readArguments, usageProblem } from './cli/usage.js';
export { findYamlFiles, isPolicyFile, readSource } from './cli/files.js';
