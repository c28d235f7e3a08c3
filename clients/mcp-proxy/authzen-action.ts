/**
 * The AuthZEN action rule (docs/api.md#authzen):
 * a name that fits the action grammar (`namespace.verb`, each part
 * `[a-z][a-z0-9_]*`) is the action as it is; any other name becomes
 * `authzen.` + the name lower-cased with every character outside `[a-z0-9_]`
 * replaced by `_`, with `t_` in front when it does not start with a letter.
 *
 * A leaf with no imports, so that one copy can serve the runtime's AuthZEN
 * routes and the MCP proxy's declared mappings (clients/ may not import
 * runtime/): the runtime keeps its own copy (runtime/domain/authzen.ts) until
 * the two are joined in a shared leaf both may import.
 */

/** The action grammar (docs/policies.md#a-policy-file): `namespace.verb`, each part `[a-z][a-z0-9_]*` (no wildcards). */
const GRAMMAR = /^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$/;

/** The longest AuthZEN action name taken (longer names are refused: docs/api.md#authzen). */
export const MAX_AUTHZEN_ACTION_NAME = 200;

/** The namespace of the actions made from AuthZEN names outside the grammar. */
export const AUTHZEN_NAMESPACE = 'authzen';

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
  if (name === '' || name.length > MAX_AUTHZEN_ACTION_NAME) return undefined;
  if (GRAMMAR.test(name)) return name;
  const verb = name.toLowerCase().replace(/[^a-z0-9_]/g, '_');
  return `${AUTHZEN_NAMESPACE}.${/^[a-z]/.test(verb) ? verb : `t_${verb}`}`;
}
