/**
 * CEL expressions evaluated within a budget (docs/mcp.md#mappings-declared-by-the-server):
 * the expressions of a server's declared mappings run on the gateway's event
 * loop, over arguments the calling agent chooses, so one call must not be
 * able to hold every other session (three nested `.map` over a 200-item list
 * ran 11 s before this bound).
 *
 * `@bufbuild/cel` has no cost limit of its own (no static cost, no step
 * counter), but every loop of CEL is a comprehension (the macros `map`,
 * `filter`, `all`, `exists`, `exists_one`) whose loop condition is evaluated
 * before each step. `compileBounded` rewrites every comprehension: its range
 * `r` into `@authz_range(r)`, which counts the range's items, and its
 * condition `c` into `@authz_step(c)`, which counts the step (functions of
 * this environment: the `@` keeps expressions from naming them). List
 * concatenation (`+`, which `map` and `filter` use at every step) is
 * replaced by one that makes a flat list, appending in place to a list of its
 * own that nothing has appended to yet (so a `map` over n items copies n
 * items, not n²/2), and counts the items it copies: the library's own builds
 * a chain whose iteration costs its depth times its length. Past `MAX_LOOP_STEPS` steps, `MAX_LIST_ITEMS` items, or
 * `MAX_EVALUATION_MS` milliseconds since the evaluation began (checked at
 * every step), the next step answers an error: the comprehension stops at
 * once, and every enclosing one at its next step. Outside loops an
 * expression's work is linear in its length (at most 2,048 characters) and
 * its input (regular expressions are RE2, linear too). So one evaluation
 * holds the event loop for about `MAX_EVALUATION_MS` at most, and it stays
 * on the event loop, with no worker.
 */
import {
  celEnv,
  celFunc,
  CelScalar,
  isCelList,
  isCelMap,
  listType,
  parse,
  plan,
  type CelInput,
  type CelList,
  type CelResult,
  type CelValue,
} from '@bufbuild/cel';

/** Most loop steps (all comprehensions of one evaluation together). */
export const MAX_LOOP_STEPS = 5_000;
/** Most list items iterated over or copied by concatenation (all loops of one evaluation together). */
export const MAX_LIST_ITEMS = 500_000;
/** Longest evaluation, in milliseconds, checked at every loop step. */
export const MAX_EVALUATION_MS = 10;

/** The names of the metering functions; `@` is outside CEL's identifiers. */
const STEP = '@authz_step';
const RANGE = '@authz_range';

type ParsedExpr = ReturnType<typeof parse>;
type Expr = NonNullable<ParsedExpr['expr']>;

/** An evaluation that went past its budget. */
export class BudgetExceeded extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BudgetExceeded';
  }
}

interface Meter {
  steps: number;
  items: number;
  deadline: number;
  exceeded?: string;
}

/** The budget of the evaluation under way (evaluations are synchronous: one at a time). */
let meter: Meter | undefined;

/** Counts list items against the budget. */
function countItems(n: number): void {
  if (meter !== undefined && meter.exceeded === undefined && (meter.items += n) > MAX_LIST_ITEMS)
    meter.exceeded = `more than ${MAX_LIST_ITEMS} list items`;
}

const env = celEnv({
  funcs: [
    celFunc(STEP, [CelScalar.DYN], CelScalar.DYN, (condition: CelValue) => {
      if (meter === undefined) return condition as CelInput;
      if (meter.exceeded === undefined) {
        if (++meter.steps > MAX_LOOP_STEPS) meter.exceeded = `more than ${MAX_LOOP_STEPS} loop steps`;
        else if (performance.now() > meter.deadline) meter.exceeded = `more than ${MAX_EVALUATION_MS} ms`;
      }
      if (meter.exceeded !== undefined) throw new BudgetExceeded(meter.exceeded);
      return condition as CelInput;
    }),
    celFunc(RANGE, [CelScalar.DYN], CelScalar.DYN, (range: CelValue) => {
      if (isCelList(range) || isCelMap(range)) countItems(range.size);
      if (meter?.exceeded !== undefined) throw new BudgetExceeded(meter.exceeded);
      return range as CelInput;
    }),
    // The same overload id as the standard library's list concatenation, which it replaces.
    celFunc(
      '_+_',
      [listType(CelScalar.DYN), listType(CelScalar.DYN)],
      listType(CelScalar.DYN),
      (left: CelList, right: CelList) => {
        if (meter?.exceeded !== undefined) throw new BudgetExceeded(meter.exceeded);
        return AppendList.concat(left, right);
      },
    ),
  ],
});

/** The library's mark of its lists (`Symbol.for`, so a list of ours is one to it too). */
const CEL_LIST = Symbol.for('@bufbuild/cel/list');

/**
 * A flat list: the first `size` items of a buffer it may share with the lists
 * made by appending to it (each sees its own length, so none changes).
 */
class AppendList implements Iterable<CelValue> {
  readonly [CEL_LIST] = {};
  constructor(
    private readonly buffer: CelValue[],
    readonly size: number,
  ) {}

  /** This list with `items` after it: in place when nothing was appended to this one yet, else on a copy. */
  static concat(left: CelList, right: CelList): CelList {
    const owned = left instanceof AppendList && left.buffer.length === left.size;
    const buffer = owned ? left.buffer : [...left];
    countItems((owned ? 0 : left.size) + right.size);
    for (const item of right) buffer.push(item);
    return new AppendList(buffer, buffer.length) as unknown as CelList;
  }

  get(index: number): CelValue | undefined {
    return Number.isInteger(index) && index >= 0 && index < this.size ? this.buffer[index] : undefined;
  }

  *values(): IterableIterator<CelValue> {
    for (let i = 0; i < this.size; i++) yield this.buffer[i]!;
  }

  [Symbol.iterator](): IterableIterator<CelValue> {
    return this.values();
  }
}

/** `f(e)`, keeping `e`'s id (errors point at the wrapped expression). */
const wrapped = (fn: string, e: Expr): Expr => ({
  ...e,
  exprKind: { case: 'callExpr', value: { $typeName: 'cel.expr.Expr.Call', function: fn, args: [e] } },
});

/** Wraps every comprehension's loop condition in the step function; answers how many it wrapped. */
function meterLoops(expr: Expr | undefined): number {
  if (expr === undefined) return 0;
  const kind = expr.exprKind;
  switch (kind.case) {
    case 'selectExpr':
      return meterLoops(kind.value.operand);
    case 'callExpr':
      return meterLoops(kind.value.target) + kind.value.args.reduce((n, a) => n + meterLoops(a), 0);
    case 'listExpr':
      return kind.value.elements.reduce((n, e) => n + meterLoops(e), 0);
    case 'structExpr':
      return kind.value.entries.reduce(
        (n, e) => n + meterLoops(e.keyKind.case === 'mapKey' ? e.keyKind.value : undefined) + meterLoops(e.value),
        0,
      );
    case 'comprehensionExpr': {
      const c = kind.value;
      const inner =
        meterLoops(c.iterRange) +
        meterLoops(c.accuInit) +
        meterLoops(c.loopCondition) +
        meterLoops(c.loopStep) +
        meterLoops(c.result);
      if (c.iterRange !== undefined) c.iterRange = wrapped(RANGE, c.iterRange);
      if (c.loopCondition !== undefined) c.loopCondition = wrapped(STEP, c.loopCondition);
      return inner + 1;
    }
    default:
      return 0;
  }
}

/** A compiled expression: evaluate it with `evaluateBounded`. */
export interface BoundedProgram {
  /** Whether the expression loops (a comprehension: `map`, `filter`, `all`, `exists`, `exists_one`). */
  readonly loops: boolean;
  readonly run: (vars: Record<string, CelInput>) => CelResult;
}

/**
 * Parses and plans an expression with its loops metered.
 *
 * @throws the parser's error when it does not parse.
 *
 * @example
 * ```ts
 * const program = compileBounded('params.items.exists(i, i > 2)');
 * console.log(program.loops, evaluateBounded(program, { params: new Map([['items', [1, 3]]]) })); // => true true
 * ```
 */
export function compileBounded(source: string): BoundedProgram {
  const parsed = parse(source);
  const loops = meterLoops(parsed.expr) > 0;
  return { loops, run: plan(env, parsed) };
}

/**
 * Evaluates a compiled expression within the budget.
 *
 * @throws BudgetExceeded past `MAX_LOOP_STEPS` loop steps, `MAX_LIST_ITEMS` list items or `MAX_EVALUATION_MS` ms.
 *
 * @example
 * ```ts
 * const program = compileBounded('params.l.map(a, params.l.map(b, params.l.map(c, a + b + c)))');
 * const l = Array.from({ length: 200 }, (_, i) => i);
 * try { evaluateBounded(program, { params: new Map([['l', l]]) }); } catch (error) { console.log((error as Error).name); } // => BudgetExceeded
 * ```
 */
export function evaluateBounded(program: BoundedProgram, vars: Record<string, CelInput>): CelResult {
  if (!program.loops) return program.run(vars);
  const budget: Meter = { steps: 0, items: 0, deadline: performance.now() + MAX_EVALUATION_MS };
  meter = budget;
  try {
    const result = program.run(vars);
    if (budget.exceeded !== undefined) throw new BudgetExceeded(budget.exceeded);
    return result;
  } finally {
    meter = undefined;
  }
}
