/**
 * `isConstantFalse`: whether a condition can never be true, whatever the request
 * (e.g. `false`, `1 == 2`, `x in []`, `contains([], x)`, `false && ...`,
 * `!true || 1 > 2`). Conservative: false whenever it is unsure. A sub-expression
 * that reads no input path is evaluated with the real compiled semantics; `!`,
 * `&&` and `||` combine known truth values; paths are unknown.
 */
import type { ConditionAst } from './ast.js';
import { test } from './compile.js';
import type { EvaluationInput } from '../policy/types.js';

/** Never read: only path-free sub-expressions are evaluated. */
const NO_INPUT: EvaluationInput = Object.freeze({ agent_id: '', action: '' });

function readsInput(node: ConditionAst): boolean {
  switch (node.kind) {
    case 'path':
      return true;
    case 'literal':
      return false;
    case 'list':
      return node.items.some(readsInput);
    case 'not':
      return readsInput(node.operand);
    case 'and':
    case 'or':
      return node.operands.some(readsInput);
    case 'compare':
    case 'arith':
      return readsInput(node.left) || readsInput(node.right);
    case 'history':
      return true;
    case 'call':
      return node.args.some(readsInput);
    default:
      return true;
  }
}

const isEmptyList = (node: ConditionAst | undefined) => node?.kind === 'list' && node.items.length === 0;

/** true / false when the condition's value is the same for every request, else undefined. */
export function constantTruth(node: ConditionAst): boolean | undefined {
  switch (node.kind) {
    case 'not': {
      const t = constantTruth(node.operand);
      return t === undefined ? undefined : !t;
    }
    case 'and':
    case 'or': {
      const decisive = node.kind === 'or';
      let allKnown = true;
      for (const operand of node.operands) {
        const t = constantTruth(operand);
        if (t === decisive) return decisive;
        if (t === undefined) allKnown = false;
      }
      return allKnown ? !decisive : undefined;
    }
    case 'compare':
      if (node.op === 'in' && isEmptyList(node.right)) return false;
      break;
    case 'call':
      if (node.fn === 'contains' && isEmptyList(node.args[0])) return false;
      break;
  }
  return readsInput(node) ? undefined : test(node)(NO_INPUT);
}

/** Whether the condition is false for every request (conservative). */
export function isConstantFalse(ast: ConditionAst): boolean {
  try {
    return constantTruth(ast) === false;
  } catch {
    return false;
  }
}
