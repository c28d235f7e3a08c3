/**
 * The shape a `tools/call` request's params must have before anything reads
 * them (docs/mcp.md#what-the-proxy-does): `name` a string, `arguments` absent,
 * null or an object, nested no deeper than `MAX_ARGUMENT_DEPTH`. Anything
 * else is answered with JSON-RPC's invalid params (`-32602`) and a message
 * saying what is wrong, instead of failing deep inside the mapping, the
 * argument digest or a declared mapping's CEL input (a stack overflow for
 * arguments nested thousands deep).
 */

/**
 * Deepest nesting of objects and arrays taken in a call's arguments (the
 * arguments object itself is level 1): the service takes a decision's body
 * nested 64 levels deep at most (runtime/shared/storable.ts), and the
 * arguments sit three levels down in it (`context.mcp.arguments`).
 */
export const MAX_ARGUMENT_DEPTH = 61;

/** JSON-RPC's invalid params, and the reason code the proxy puts in `error.data`. */
export const INVALID_PARAMS_CODE = -32602;
export const INVALID_PARAMS_REASON = 'mcp_proxy.invalid_params';

const isContainer = (v: unknown): v is object => typeof v === 'object' && v !== null;

/**
 * How deep objects and arrays nest in a value, counted without recursion and
 * only up to `limit + 1` (a deeper value is not walked further).
 *
 * @example
 * ```ts
 * console.log(nestingDepth({ a: [1, { b: 2 }] }, 64), nestingDepth('x', 64), nestingDepth([[[[]]]], 2)); // => 3 0 3
 * ```
 */
export function nestingDepth(value: unknown, limit: number): number {
  if (!isContainer(value)) return 0;
  let deepest = 0;
  const stack: Array<[object, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (depth > deepest) deepest = depth;
    if (deepest > limit) return deepest;
    for (const child of Object.values(node)) if (isContainer(child)) stack.push([child, depth + 1]);
  }
  return deepest;
}

/**
 * What is wrong with a `tools/call` request's params, or undefined when
 * nothing is.
 *
 * @example
 * ```ts
 * console.log(callParamsProblem({ name: 'read_file', arguments: { path: 'a' } }), callParamsProblem({ name: 42 })); // => undefined params.name must be the tool's name, a string (not 42)
 * ```
 */
export function callParamsProblem(params: Record<string, unknown>): string | undefined {
  const { name, arguments: args } = params;
  if (typeof name !== 'string') {
    const shown =
      name === undefined
        ? 'missing'
        : `not ${isContainer(name) ? (Array.isArray(name) ? 'an array' : 'an object') : JSON.stringify(name)}`;
    return `params.name must be the tool's name, a string (${shown})`;
  }
  if (args === undefined || args === null) return undefined;
  if (!isContainer(args) || Array.isArray(args))
    return `params.arguments must be an object of the tool's arguments (not ${Array.isArray(args) ? 'an array' : JSON.stringify(args)})`;
  if (nestingDepth(args, MAX_ARGUMENT_DEPTH) > MAX_ARGUMENT_DEPTH)
    return `params.arguments is nested deeper than ${MAX_ARGUMENT_DEPTH} levels of objects and arrays`;
  return undefined;
}
