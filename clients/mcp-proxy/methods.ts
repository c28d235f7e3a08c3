/**
 * Which MCP requests the proxy knows, which it decides, and how a decided
 * request other than `tools/call` becomes a decision (docs/mcp.md#6-resources-and-prompts-decided):
 *
 * | method | action | resource | `context.mcp` |
 * | --- | --- | --- | --- |
 * | `resources/read`, `resources/subscribe` | `<server>.resources_read` | the URI | `server`, `method`, `uri` |
 * | `prompts/get` | `<server>.prompts_get` | `prompt:<name>` | `server`, `method`, `prompt`, `arguments` |
 * | `completion/complete` | `<server>.completion_complete` | `prompt:<name>` or `ref.uri` | `server`, `method`, `ref`, `argument`, `context` |
 * | `logging/setLevel` | `<server>.logging_setlevel` | none | `server`, `method`, `level` |
 *
 * The configuration's `methods:` replaces a method's action and resource
 * (`{name}` in a resource template is the request's param of that name; a
 * dotted name such as `{ref.name}` reads inside it).
 */
import { actionPart, ArgumentProblem } from './actions.js';

/** Decided methods other than `tools/call`, and the verb of their default action. */
export const DECIDED_METHODS = {
  'resources/read': 'resources_read',
  'resources/subscribe': 'resources_read',
  'prompts/get': 'prompts_get',
  'completion/complete': 'completion_complete',
  'logging/setLevel': 'logging_setlevel',
} as const;

export type DecidedMethod = keyof typeof DECIDED_METHODS;

/** The configuration's `methods:`: a decided method's action and resource template over its params. */
export type MethodMappings = Partial<Record<DecidedMethod, { action?: string; resource?: string }>>;

/** What the mapping of methods reads of the configuration. */
export interface MethodConfig {
  /** The namespace of the server's actions. */
  server: string;
  methods: MethodMappings;
}

/** Requests relayed without a decision (the list methods are filtered, see ListKind). */
export const UNDECIDED_METHODS = new Set([
  'initialize',
  'ping',
  'tools/list',
  'resources/list',
  'resources/templates/list',
  'resources/unsubscribe',
  'prompts/list',
]);

/** Every request method the proxy knows: the decided ones, `tools/call` and the undecided ones. */
export const KNOWN_METHODS = new Set<string>(['tools/call', ...Object.keys(DECIDED_METHODS), ...UNDECIDED_METHODS]);

/**
 * The list methods answered empty when the action behind them can never be
 * allowed, and the decided method whose action counts.
 */
export const FILTERED_LISTS = {
  'prompts/list': { field: 'prompts', method: 'prompts/get' },
  'resources/list': { field: 'resources', method: 'resources/read' },
  'resources/templates/list': { field: 'resourceTemplates', method: 'resources/read' },
} as const satisfies Record<string, { field: string; method: DecidedMethod }>;

export type FilteredList = keyof typeof FILTERED_LISTS;

/**
 * Whether a method is one of the decided ones other than `tools/call`.
 *
 * @example
 * ```ts
 * console.log(isDecidedMethod('prompts/get'), isDecidedMethod('prompts/list')); // => true false
 * ```
 */
export function isDecidedMethod(method: string): method is DecidedMethod {
  return Object.hasOwn(DECIDED_METHODS, method);
}

/** The decision fields of one decided request. */
export interface MethodTarget {
  action: string;
  resource?: string;
  /** `context.mcp` of the decision. */
  mcp: Record<string, unknown>;
}

type Params = Record<string, unknown>;

const isRecord = (v: unknown): v is Params => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A param by a dotted path (`ref.name`). */
function paramAt(params: Params, path: string): unknown {
  let value: unknown = params;
  for (const part of path.split('.')) value = isRecord(value) && Object.hasOwn(value, part) ? value[part] : undefined;
  return value;
}

/** A string param the method needs; its absence is the client's mistake, refused before any decision. */
function required(params: Params, path: string, method: string): string {
  const value = paramAt(params, path);
  if (typeof value !== 'string' || value === '')
    throw new ArgumentProblem(`${method} needs params.${path} as a non-empty string`);
  return value;
}

/**
 * Fills a `methods:` resource template from the request's params.
 *
 * @throws ArgumentProblem when a named param is missing or not a string, number or boolean.
 *
 * @example
 * ```ts
 * console.log(fillParamsTemplate('doc:{ref.name}', { ref: { type: 'ref/prompt', name: 'greet' } })); // => doc:greet
 * ```
 */
export function fillParamsTemplate(template: string, params: Params): string {
  return template.replace(/\{([^{}]*)\}/g, (_, name: string) => {
    const value = paramAt(params, name);
    if (typeof value === 'string') return value;
    if (typeof value === 'number' || typeof value === 'boolean') return JSON.stringify(value);
    throw new ArgumentProblem(
      `the resource template ${JSON.stringify(template)} needs the param "${name}" as a string, number or boolean`,
    );
  });
}

/**
 * The default action of a decided method under a server's namespace.
 *
 * @example
 * ```ts
 * console.log(methodAction({ server: 'files', methods: {} }, 'resources/subscribe')); // => files.resources_read
 * ```
 */
export function methodAction(config: MethodConfig, method: DecidedMethod): string {
  return config.methods[method]?.action ?? `${actionPart(config.server)}.${DECIDED_METHODS[method]}`;
}

/**
 * The action, resource and `context.mcp` of one decided request.
 *
 * @throws ArgumentProblem when the params lack what the method (or its mapping) needs.
 *
 * @example
 * ```ts
 * const t = methodTarget({ server: 'docs', methods: {} }, 'prompts/get', { name: 'greet', arguments: { who: 'Ada' } });
 * console.log(t.action, t.resource); // => docs.prompts_get prompt:greet
 * ```
 */
export function methodTarget(config: MethodConfig, method: DecidedMethod, params: Params): MethodTarget {
  const server = config.server;
  let resource: string | undefined;
  let mcp: Record<string, unknown>;
  switch (method) {
    case 'resources/read':
    case 'resources/subscribe': {
      const uri = required(params, 'uri', method);
      resource = uri;
      mcp = { server, method, uri };
      break;
    }
    case 'prompts/get': {
      const name = required(params, 'name', method);
      resource = `prompt:${name}`;
      mcp = { server, method, prompt: name, arguments: isRecord(params.arguments) ? params.arguments : {} };
      break;
    }
    case 'completion/complete': {
      const ref = params.ref;
      if (!isRecord(ref)) throw new ArgumentProblem('completion/complete needs params.ref');
      resource =
        ref.type === 'ref/prompt'
          ? `prompt:${required(params, 'ref.name', method)}`
          : required(params, 'ref.uri', method);
      mcp = {
        server,
        method,
        ref,
        argument: params.argument ?? null,
        ...(params.context === undefined ? {} : { context: params.context }),
      };
      break;
    }
    case 'logging/setLevel':
      mcp = { server, method, level: required(params, 'level', method) };
      break;
  }
  const mapping = config.methods[method];
  if (mapping?.resource !== undefined) resource = fillParamsTemplate(mapping.resource, params);
  return { action: methodAction(config, method), ...(resource === undefined ? {} : { resource }), mcp };
}
