/**
 * Actions made from names that come from outside: a part of an action made
 * from any name (`actionPart`), and the AuthZEN action rule (docs/api.md#authzen):
 * a name that fits the action grammar
 * (`namespace.verb`, each part `[a-z][a-z0-9_]*`) is the action as it is; any
 * other becomes `authzen.` + the name made an action part (`namespacedActionOf`:
 * the same rule with another namespace).
 *
 * A leaf (it imports only the action grammar of ./action.ts, itself a leaf),
 * so that one definition serves the runtime's AuthZEN routes (through
 * compiler/index.ts) and the MCP proxy's tool actions and declared mappings
 * (clients/ may import these two leaves of the compiler and nothing else of
 * it: test/architecture/import-graph.test.ts).
 */
import { isValidAction } from './action.js';

/** The longest AuthZEN action name taken (docs/api.md#authzen: longer names are refused, 400 validation.invalid_action). */
export const MAX_AUTHZEN_ACTION_NAME = 200;

/** The namespace of the actions made from AuthZEN names outside the action grammar. */
export const AUTHZEN_NAMESPACE = 'authzen';

/**
 * One part of an action made from any name: lower-cased, every character
 * outside `[a-z0-9_]` replaced by `_`, and `t_` in front when it does not
 * start with a letter.
 *
 * @example
 * ```ts
 * import { actionPart } from 'agent-authz/compiler';
 *
 * console.log(actionPart('Write-File'), actionPart('2fa'), actionPart('')); // => write_file t_2fa t_
 * ```
 */
export function actionPart(name: string): string {
  const part = name.toLowerCase().replace(/[^a-z0-9_]/g, '_');
  return /^[a-z]/.test(part) ? part : `t_${part}`;
}

/**
 * The AuthZEN action rule with another namespace for the names outside the
 * grammar: the name itself when it is an action (`namespace.verb`), else
 * `<namespace>.` + the name made an action part; undefined when the name is
 * longer than 200 characters. The MCP gateway maps a server's declared names
 * into that server's namespace with it (`bank` + `small_transfer` ->
 * `bank.small_transfer`).
 *
 * @example
 * ```ts
 * import { namespacedActionOf } from 'agent-authz/compiler';
 *
 * console.log(namespacedActionOf('bank', 'small_transfer'), namespacedActionOf('bank', 'Small Transfer'), namespacedActionOf('bank', 'authzen.get')); // => bank.small_transfer bank.small_transfer authzen.get
 * ```
 */
export function namespacedActionOf(namespace: string, name: string): string | undefined {
  if (name.length > MAX_AUTHZEN_ACTION_NAME) return undefined;
  return isValidAction(name) ? name : `${namespace}.${actionPart(name)}`;
}

/**
 * The decision's action for an AuthZEN action name: the name itself when it
 * is an action (`namespace.verb`), else `authzen.` + the name made an action
 * part; undefined when the name is longer than 200 characters.
 *
 * @example
 * ```ts
 * import { authzenActionOf } from 'agent-authz/compiler';
 *
 * console.log(authzenActionOf('orders.read'), authzenActionOf('GET'), authzenActionOf('documents/read'), authzenActionOf('2fa.verify')); // => orders.read authzen.get authzen.documents_read authzen.t_2fa_verify
 * console.log(authzenActionOf('a'.repeat(201))); // => undefined
 * ```
 */
export function authzenActionOf(name: string): string | undefined {
  return namespacedActionOf(AUTHZEN_NAMESPACE, name);
}
