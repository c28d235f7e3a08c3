/**
 * Mappings declared by the MCP server (docs/mcp.md#mappings-declared-by-the-server;
 * COAZ-MCP binding, draft 1), with `declared_mappings: true` in
 * the configuration. A tool whose `inputSchema` carries `x-authzen-mapping`
 * with an `evaluation` envelope is decided with the mapping's `action.name`
 * (through the AuthZEN action rule, in the server's namespace) and its
 * `resource` as `<type>:<id>`:
 *
 * ```json
 * "x-authzen-mapping": { "evaluation": {
 *   "action": { "name": "$params.arguments.amount > 100 ? 'approve_large' : 'approve'" },
 *   "resource": { "type": "invoice", "id": "$params.arguments.invoice_id" } } }
 * ```
 *
 * A string that begins with `$` is a CEL expression (without the `$`) over
 * `params` (the tools/call params) and `token` (the verified claims of the
 * agent's token; `{}` without `auth:`); `$$` escapes a literal `$`; any other
 * value is a literal. The mapping's `subject` and `context` are ignored (the
 * agent is the proxy's to name).
 *
 * A server's mapping stays in its own namespace: a name outside the action
 * grammar (`small_transfer`) becomes `<server>.<name>` (`bank.small_transfer`),
 * a name of the grammar must be `<server>.*` already; any other action
 * (`authzen.*` included) only when the configuration lists it under
 * `declared_mappings: { extra_actions: [...] }`. Otherwise a server could
 * claim actions that policies grant for another server, and an expression
 * over the call's arguments would let the calling agent pick them.
 *
 * Expressions are evaluated within a budget (cel-budget.ts); a mapping whose
 * expressions loop takes no list of more than 1,000 items from the call. The
 * `evaluations` envelope (several decisions per call) is not offered. A
 * mapping that is refused, fails to evaluate or goes past its budget is a
 * MappingError: the call is answered `mcp_proxy.mapping_error` and nothing is
 * forwarded. The configuration's `tools:` entry for a tool wins.
 *
 * The mappings are read from the `tools/list` answers the proxy relays (and
 * its own reading of the tools), per session: CEL expressions are parsed and
 * planned once, when a listing names the tool.
 */
import { PagedListing, type ListingPage } from './paged-listing.js';
import { isCelError, isCelList, isCelMap, type CelInput, type CelValue } from '@bufbuild/cel';
import { actionPart, type CallTarget } from './actions.js';
import { serverAction } from './authzen-action.js';
import { BudgetExceeded, compileBounded, evaluateBounded, type BoundedProgram } from './cel-budget.js';

/** The member of a tool's `inputSchema` that carries its declared mapping. */
export const MAPPING_MEMBER = 'x-authzen-mapping';
/** The reason code of a call refused because of its tool's declared mapping. */
export const MAPPING_ERROR = 'mcp_proxy.mapping_error';
/** Longest CEL expression taken from a mapping. */
export const MAX_EXPRESSION_LENGTH = 2048;
/** Longest list of a call's params (or token) a mapping whose expressions loop takes. */
export const MAX_ITERATED_LIST = 1000;

/** The `declared_mappings:` section of the configuration (`true` is `{ extra_actions: [] }`). */
export interface DeclaredMappingsConfig {
  /** Actions outside `<server>.` the server's mappings may produce (exact actions). */
  extra_actions: string[];
}

/** A declared mapping that is refused, or that failed for one call. */
export class MappingError extends Error {
  readonly code = MAPPING_ERROR;
  constructor(message: string) {
    super(message);
    this.name = 'MappingError';
  }
}

/** The input variables of the expressions (COAZ-MCP: the information model). */
export interface MappingInput {
  /** The `params` of the tools/call request. */
  params: Record<string, unknown>;
  /** The verified claims of the agent's token; `{}` when there is none. */
  token: Record<string, unknown>;
}

/** What a declared mapping decides a call with (no amount: a mapping names none). */
export type DeclaredTarget = CallTarget & { resource: string };

/** The input variables as CEL values (converted once per call). */
export interface CelVars {
  params: CelInput;
  token: CelInput;
}

/** One value of a mapping; `loops` when it is an expression with a comprehension. */
type Value = ((vars: CelVars) => unknown) & { loops?: boolean };

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A JSON value as CEL input: objects become maps (members left undefined dropped), numbers doubles; lists longer than `maxList` refused. */
function toCel(value: unknown, maxList: number): CelInput {
  if (Array.isArray(value)) {
    if (value.length > maxList)
      throw new MappingError(
        `a list of ${value.length} items in the call, more than the ${maxList} a mapping that loops takes`,
      );
    return value.map((v) => toCel(v, maxList));
  }
  if (typeof value === 'object' && value !== null) {
    const map = new Map<string, CelInput>();
    for (const [k, v] of Object.entries(value)) if (v !== undefined) map.set(k, toCel(v, maxList));
    return map;
  }
  if (value === undefined) return null;
  return value as CelInput;
}

/**
 * The input variables of one call as CEL values; with `maxList`, a list
 * longer than it is refused.
 *
 * @throws MappingError when a list is longer than `maxList`.
 *
 * @example
 * ```ts
 * const vars = celVars({ params: { arguments: { id: 'c-1' } }, token: {} });
 * ```
 */
export function celVars(input: MappingInput, maxList = Infinity): CelVars {
  return { params: toCel(input.params, maxList), token: toCel(input.token, maxList) };
}

/** A CEL value as JSON: maps and lists become objects and arrays, ints numbers. */
function toJson(value: CelValue): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (isCelList(value)) return [...value].map((v) => toJson(v));
  if (isCelMap(value)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of value.entries()) out[String(k)] = toJson(v);
    return out;
  }
  return value;
}

/**
 * One value of a mapping: a CEL expression when the string begins with `$`
 * (parsed and planned now), a literal otherwise (`$$` escapes a `$`).
 *
 * @throws MappingError when the expression does not parse.
 *
 * @example
 * ```ts
 * const v = compileValue('$params.arguments.id', 'resource.id');
 * console.log(v(celVars({ params: { arguments: { id: 'c-1' } }, token: {} })), compileValue('$$5', 'x')(celVars({ params: {}, token: {} }))); // => c-1 $5
 * ```
 */
export function compileValue(value: unknown, at: string): Value {
  if (typeof value !== 'string' || !value.startsWith('$')) return () => value;
  if (value.startsWith('$$')) {
    const literal = value.slice(1);
    return () => literal;
  }
  const source = value.slice(1);
  if (source.length > MAX_EXPRESSION_LENGTH)
    throw new MappingError(`${at}: the expression is longer than ${MAX_EXPRESSION_LENGTH} characters`);
  let program: BoundedProgram;
  try {
    program = compileBounded(source);
  } catch (error) {
    throw new MappingError(
      `${at}: the expression ${JSON.stringify(value)} does not parse: ${(error as Error).message}`,
    );
  }
  const evaluate: Value = (vars) => {
    let result: ReturnType<BoundedProgram['run']>;
    try {
      result = evaluateBounded(program, { params: vars.params, token: vars.token });
    } catch (error) {
      if (error instanceof BudgetExceeded)
        throw new MappingError(
          `${at}: the expression ${JSON.stringify(value)} went past its budget (${error.message})`,
        );
      throw new MappingError(`${at}: the expression ${JSON.stringify(value)} failed: ${(error as Error).message}`);
    }
    if (isCelError(result))
      throw new MappingError(`${at}: the expression ${JSON.stringify(value)} failed: ${result.message}`);
    return toJson(result);
  };
  evaluate.loops = program.loops;
  return evaluate;
}

/** A resolved value as one part of the decision: a non-empty string, or a number in its JSON form. */
function text(value: unknown, at: string): string {
  if (typeof value === 'string' && value !== '') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return JSON.stringify(value);
  throw new MappingError(
    `${at}: must resolve to a non-empty string, not ${value === undefined ? 'nothing' : JSON.stringify(value)}`,
  );
}

/**
 * One tool's declared mapping, checked and compiled when a listing names it.
 *
 * @example
 * ```ts
 * const m = DeclaredMapping.from({ evaluation: { action: { name: 'get_customer' }, resource: { type: 'customer', id: '$params.arguments.id' } } }, 'crm');
 * console.log(m.resolve({ params: { name: 'get_customer', arguments: { id: 'c-1' } }, token: {} })); // => { action: 'crm.get_customer', resource: 'customer:c-1' }
 * ```
 */
export class DeclaredMapping {
  private constructor(
    private readonly namespace: string,
    private readonly extraActions: ReadonlySet<string>,
    private readonly action: Value,
    private readonly resourceType: Value,
    private readonly resourceId: Value,
    /** The action when `action.name` is a literal (for listings), else undefined. */
    readonly fixedAction: string | undefined,
  ) {}

  /**
   * Checks and compiles the value of `x-authzen-mapping`.
   *
   * @param server - the configuration's `server` (its actions' namespace).
   * @param extraActions - the actions outside `<server>.` it may produce (`declared_mappings.extra_actions`).
   * @throws MappingError when the mapping is malformed, an expression does
   *   not parse, or a literal action is outside `<server>.` and `extraActions`.
   */
  static from(mapping: unknown, server: string, extraActions: readonly string[] = []): DeclaredMapping {
    if (!isRecord(mapping)) throw new MappingError('the mapping must be an object with an "evaluation" envelope');
    const keys = Object.keys(mapping);
    if (keys.length !== 1 || keys[0] !== 'evaluation') {
      if (keys.includes('evaluations'))
        throw new MappingError(
          'the "evaluations" envelope (several decisions per call) is not supported: declare one "evaluation"',
        );
      throw new MappingError(
        `the mapping must have exactly one member, "evaluation" (found ${keys.map((k) => JSON.stringify(k)).join(', ') || 'none'})`,
      );
    }
    const evaluation = mapping.evaluation;
    if (!isRecord(evaluation)) throw new MappingError('evaluation: must be an object with action and resource');
    const { action, resource } = evaluation;
    if (!isRecord(action) || action.name === undefined)
      throw new MappingError('evaluation.action: must be an object with a "name"');
    if (!isRecord(resource) || resource.type === undefined || resource.id === undefined)
      throw new MappingError('evaluation.resource: must be an object with "type" and "id"');
    const namespace = actionPart(server);
    const name = compileValue(action.name, 'evaluation.action.name');
    const isLiteral = !(
      typeof action.name === 'string' &&
      action.name.startsWith('$') &&
      !action.name.startsWith('$$')
    );
    const extra = new Set(extraActions);
    const fixed = isLiteral ? checkedAction(name(celVars({ params: {}, token: {} })), namespace, extra) : undefined;
    return new DeclaredMapping(
      namespace,
      extra,
      name,
      compileValue(resource.type, 'evaluation.resource.type'),
      compileValue(resource.id, 'evaluation.resource.id'),
      fixed,
    );
  }

  /** Whether an expression of the mapping loops (then the call's lists are capped). */
  get #loops(): boolean {
    return this.action.loops === true || this.resourceType.loops === true || this.resourceId.loops === true;
  }

  /**
   * The action and resource of one call.
   *
   * @throws MappingError when an expression fails, goes past its budget or
   *   yields what cannot be the action or resource, the action is outside
   *   `<server>.` and the extra actions, or a list of the call is too long
   *   for a mapping that loops.
   */
  resolve(input: MappingInput): DeclaredTarget {
    const vars = celVars(input, this.#loops ? MAX_ITERATED_LIST : Infinity);
    const action = this.fixedAction ?? checkedAction(this.action(vars), this.namespace, this.extraActions);
    const type = text(this.resourceType(vars), 'evaluation.resource.type');
    const id = text(this.resourceId(vars), 'evaluation.resource.id');
    return { action, resource: `${type}:${id}` };
  }
}

/** The AuthZEN action rule in the server's namespace applied to a resolved `action.name`, and the namespace check. */
function checkedAction(name: unknown, namespace: string, extra: ReadonlySet<string>): string {
  if (typeof name !== 'string')
    throw new MappingError(
      `evaluation.action.name: must resolve to a string, not ${name === undefined ? 'nothing' : JSON.stringify(name)}`,
    );
  const action = serverAction(namespace, name);
  if (action === undefined) throw new MappingError('evaluation.action.name: must be 1 to 200 characters');
  if (!action.startsWith(`${namespace}.`) && !extra.has(action)) {
    throw new MappingError(
      `the action ${action} is outside this server's namespace ${namespace}.* (list it under declared_mappings.extra_actions to accept it)`,
    );
  }
  return action;
}

/** How a listed tool is treated by the listing filter: by an action of its own, always shown, or hidden. */
export type ListingRule = { action: string } | 'shown' | 'hidden';

/**
 * The declared mappings of one session's tools, as its listings last said.
 *
 * @example
 * ```ts
 * const declared = new DeclaredMappings({ server: 'crm', declared_mappings: { extra_actions: [] }, tools: {} }, console.error);
 * declared.note([{ name: 'get_customer', inputSchema: { type: 'object', 'x-authzen-mapping': { evaluation: { action: { name: 'get_customer' }, resource: { type: 'customer', id: '$params.arguments.id' } } } } }]);
 * console.log(declared.target({ name: 'get_customer', arguments: { id: 'c-1' } }, {})); // => { action: 'crm.get_customer', resource: 'customer:c-1' }
 * ```
 */
export class DeclaredMappings {
  /** By tool name: the compiled mapping, why it was refused, or null (none, or the configuration's entry wins). */
  #listing = new PagedListing<DeclaredMapping | MappingError | null>();

  constructor(
    private readonly config: {
      server: string;
      declared_mappings?: DeclaredMappingsConfig;
      tools: Record<string, unknown>;
    },
    private readonly log: (line: string) => void,
  ) {}

  /** Whether the configuration asks for declared mappings at all. */
  get enabled(): boolean {
    return this.config.declared_mappings !== undefined;
  }

  /**
   * Notes the mappings of the tools a listing offers. A listing's later pages
   * add to its first; the whole listing replaces the previous one when its
   * last page is read (until then a tool the listing has not named yet keeps
   * its mapping: a client that reads only the first page does not change how
   * the tools of the others are decided). A tool without a mapping (or whose
   * configuration entry wins) is left to the configuration's mapping.
   */
  note(tools: ReadonlyArray<{ name: string; inputSchema?: unknown }>, page: ListingPage = { firstPage: true }): void {
    if (!this.enabled) return;
    this.#listing.note(
      tools.map((tool) => [tool.name, this.#compile(tool)] as const),
      page,
    );
  }

  /** A listed tool's mapping, why it is refused, or null when it has none (or its configuration entry wins). */
  #compile(tool: { name: string; inputSchema?: unknown }): DeclaredMapping | MappingError | null {
    if (Object.hasOwn(this.config.tools, tool.name)) return null;
    const schema = tool.inputSchema;
    if (!isRecord(schema) || !Object.hasOwn(schema, MAPPING_MEMBER)) return null;
    try {
      return DeclaredMapping.from(
        schema[MAPPING_MEMBER],
        this.config.server,
        this.config.declared_mappings?.extra_actions,
      );
    } catch (error) {
      const refused = error instanceof MappingError ? error : new MappingError((error as Error).message);
      this.log(`tool "${tool.name}": its declared mapping is refused (${refused.message}); its calls are refused`);
      return refused;
    }
  }

  /** The tool's mapping as the listing being read says, else as the last complete one did. */
  #mapping(tool: string): DeclaredMapping | MappingError | undefined {
    return this.#listing.get(tool) ?? undefined;
  }

  /** Whether the tool's calls are decided by a declared mapping (a refused one included). */
  has(tool: string): boolean {
    return this.#mapping(tool) !== undefined;
  }

  /**
   * The action and resource of a call of a tool with a declared mapping;
   * undefined for a tool without one.
   *
   * @throws MappingError when the mapping was refused or fails for this call.
   */
  target(
    params: { name: string } & Record<string, unknown>,
    token: Record<string, unknown>,
  ): DeclaredTarget | undefined {
    const mapping = this.#mapping(params.name);
    if (mapping === undefined) return undefined;
    if (mapping instanceof MappingError) throw mapping;
    return mapping.resolve({ params, token });
  }

  /**
   * How the listing filter treats a tool with a declared mapping: checked by
   * its literal action, shown when its action is an expression (it depends on
   * the call), hidden when its mapping is refused; undefined for other tools.
   */
  listing(tool: string): ListingRule | undefined {
    const mapping = this.#mapping(tool);
    if (mapping === undefined) return undefined;
    if (mapping instanceof MappingError) return 'hidden';
    return mapping.fixedAction === undefined ? 'shown' : { action: mapping.fixedAction };
  }
}
