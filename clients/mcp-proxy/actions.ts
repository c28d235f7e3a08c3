/**
 * From an MCP tool call to a decision request's action, resource and amount
 * (docs/mcp.md#action-names):
 *
 * - an unmapped tool's action is `<server>.<tool>`: each part lower-cased,
 *   every character outside `[a-z0-9_]` replaced by `_`, and `t_` put in front
 *   of a part that does not start with a letter;
 * - two tools that would map to the same action stop the proxy at start, unless
 *   both are mapped to it explicitly in the configuration (several tools may
 *   deliberately share one action; `context.mcp.tool` still tells them apart);
 * - `{name}` in a resource template is the tool argument of that name;
 *   `amount` names the argument that carries the amount.
 */
import { ACTION_RE } from '../../compiler/patterns/action.js';
import { actionPart } from '../../compiler/patterns/action-names.js';

/** The action grammar (docs/policies.md#a-policy-file): `namespace.verb`, each part `[a-z][a-z0-9_]*` (the compiler's, a leaf clients may import). */
export const ACTION_PATTERN = ACTION_RE;

/** One part of a derived action name (the compiler's rule, shared with the AuthZEN action rule): `actionPart('Write-File')` is `write_file`. */
export { actionPart };

const PLACEHOLDER = /\{([^{}]*)\}/g;

/** How one tool's calls become decisions (the `tools:` entries of the configuration, config.ts). */
export interface ToolMapping {
  /** The action decided for the tool (`namespace.verb`); default `<server>.<tool>`, sanitised. */
  action?: string;
  /** A resource template: `{name}` is the tool argument of that name, e.g. `file:{path}`. */
  resource?: string;
  /** The name of the argument that carries the decision's `amount`. */
  amount?: string;
}

/**
 * The action of a tool the configuration does not map.
 *
 * @example
 * ```ts
 * console.log(defaultAction('files', 'read_file')); // => files.read_file
 * console.log(defaultAction('My Server', 'Send.Mail')); // => my_server.send_mail
 * ```
 */
export function defaultAction(server: string, tool: string): string {
  return `${actionPart(server)}.${actionPart(tool)}`;
}

/**
 * What is wrong with a resource template (empty when nothing is).
 *
 * @example
 * ```ts
 * console.log(templateProblems('file:{path}'), templateProblems('file:{}').length); // => [] 1
 * ```
 */
export function templateProblems(template: string): string[] {
  const problems: string[] = [];
  for (const m of template.matchAll(PLACEHOLDER))
    if (m[1]!.trim() === '') problems.push(`empty placeholder "{}" in ${JSON.stringify(template)}`);
  const rest = template.replace(PLACEHOLDER, '');
  if (/[{}]/.test(rest)) problems.push(`unbalanced "{" or "}" in ${JSON.stringify(template)}`);
  return problems;
}

/** A value that could not be taken from a call's arguments. */
export class ArgumentProblem extends Error {
  readonly code = 'mcp_proxy.invalid_arguments';
}

/**
 * Fills a resource template from the call's arguments: strings as they are,
 * numbers and booleans in their JSON form.
 *
 * @throws ArgumentProblem when a named argument is missing or not a string, number or boolean.
 *
 * @example
 * ```ts
 * console.log(fillTemplate('customer:{customer_id}', { customer_id: 'cus_1', amount: 5 })); // => customer:cus_1
 * ```
 */
export function fillTemplate(template: string, args: Record<string, unknown>): string {
  return template.replace(PLACEHOLDER, (_, name: string) => {
    const value = args[name];
    if (typeof value === 'string') return value;
    if (typeof value === 'number' || typeof value === 'boolean') return JSON.stringify(value);
    throw new ArgumentProblem(
      `the resource template ${JSON.stringify(template)} needs the argument "${name}" as a string, number or boolean`,
    );
  });
}

/**
 * The decision's amount from the argument that carries it.
 *
 * @throws ArgumentProblem when the argument is missing or not a finite number >= 0.
 *
 * @example
 * ```ts
 * console.log(amountFrom({ amount: 12.5 }, 'amount')); // => 12.5
 * ```
 */
export function amountFrom(args: Record<string, unknown>, name: string): number {
  const value = args[name];
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new ArgumentProblem(`the argument "${name}" carries the amount: it must be a number >= 0`);
  }
  return value;
}

/** The decision fields of one tool call. */
export interface CallTarget {
  action: string;
  resource?: string;
  amount?: number;
}

/**
 * The tools' actions under one configuration, and the names that collide.
 *
 * @example
 * ```ts
 * const map = new ActionMap(config);
 * console.log(map.collisions(['Write-File', 'write_file'])); // => [{ action: 'files.write_file', tools: ['Write-File', 'write_file'] }]
 * console.log(map.target('write_file', { path: '/tmp/a' })); // => { action: 'files.write', resource: 'file:/tmp/a' }
 * ```
 */
export class ActionMap {
  constructor(private readonly config: { server: string; tools: Record<string, ToolMapping> }) {}

  /** The action of a tool: its mapping's, else the derived one. */
  actionOf(tool: string): string {
    return this.mappingOf(tool)?.action ?? defaultAction(this.config.server, tool);
  }

  /** Whether the configuration names the tool's action itself. */
  isExplicit(tool: string): boolean {
    return this.mappingOf(tool)?.action !== undefined;
  }

  /**
   * Groups of tools that map to one action where at least one of them gets
   * the action by the naming rule (an accident, not a choice).
   */
  collisions(tools: readonly string[]): Array<{ action: string; tools: string[] }> {
    const byAction = new Map<string, string[]>();
    for (const tool of new Set(tools)) {
      const action = this.actionOf(tool);
      byAction.set(action, [...(byAction.get(action) ?? []), tool]);
    }
    return [...byAction]
      .filter(([, names]) => names.length > 1 && names.some((n) => !this.isExplicit(n)))
      .map(([action, names]) => ({ action, tools: names.sort() }));
  }

  /** Mapped tools the upstream does not offer (probably a typo in the configuration). */
  unknownMappings(tools: readonly string[]): string[] {
    const offered = new Set(tools);
    return Object.keys(this.config.tools).filter((t) => !offered.has(t));
  }

  /**
   * The action, resource and amount of one call.
   *
   * @throws ArgumentProblem when the arguments lack what the mapping needs.
   */
  target(tool: string, args: Record<string, unknown>): CallTarget {
    const mapping = this.mappingOf(tool);
    const target: CallTarget = { action: this.actionOf(tool) };
    if (mapping?.resource !== undefined) target.resource = fillTemplate(mapping.resource, args);
    if (mapping?.amount !== undefined) target.amount = amountFrom(args, mapping.amount);
    return target;
  }

  private mappingOf(tool: string) {
    return Object.hasOwn(this.config.tools, tool) ? this.config.tools[tool] : undefined;
  }
}
