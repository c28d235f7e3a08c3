/**
 * The AuthZEN action rule (docs/api.md#authzen) as
 * the MCP proxy's declared mappings apply it: the one definition
 * (compiler/patterns/action-names.ts, a leaf the runtime's AuthZEN routes use
 * too), with an empty name refused as well (a mapping must name an action).
 */
import { AUTHZEN_NAMESPACE, authzenActionOf, MAX_AUTHZEN_ACTION_NAME } from '../../compiler/patterns/action-names.js';

export { AUTHZEN_NAMESPACE, MAX_AUTHZEN_ACTION_NAME };

/**
 * The decision's action for an AuthZEN action name, or undefined when the
 * name is empty or longer than 200 characters.
 *
 * @example
 * ```ts
 * console.log(authzenAction('orders.read'), authzenAction('GET'), authzenAction('documents/read'), authzenAction('2fa')); // => orders.read authzen.get authzen.documents_read authzen.t_2fa
 * ```
 */
export function authzenAction(name: string): string | undefined {
  return name === '' ? undefined : authzenActionOf(name);
}
