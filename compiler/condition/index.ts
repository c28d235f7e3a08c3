export type {
  ArithNode,
  ArithOperator,
  CallNode,
  CompareNode,
  CompareOperator,
  ConditionAst,
  ConditionIssue,
  ConditionType,
  FunctionName,
  HistoryNode,
  ListNode,
  LiteralNode,
  LiteralValue,
  LogicalNode,
  NotNode,
  PathNode,
  PathRoot,
  SourcePos,
} from './ast.js';
export { conditionNodes, MAX_LENGTH, parseCondition, readsSessionLabels } from './ast.js';
export { MAX_DEPTH } from './parser.js';
export { checkCondition } from './check.js';
export { compileCondition } from './compile.js';
export { isConstantFalse } from './fold.js';
export { conditionPaths, printCondition } from './print.js';
export { analyzeCondition, type ConditionAnalysis } from './analyze.js';
export { conditionProbes, historyCalls, historyIssues, matchFieldProblem, probeOf } from './history.js';
