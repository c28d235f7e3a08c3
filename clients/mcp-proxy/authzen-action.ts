/**
 * The AuthZEN action rule (docs/api.md#authzen) as the MCP gateway applies it
 * to a server's declared mappings (docs/mcp.md#mappings-declared-by-the-server):
 * the one definition (compiler/patterns/action-names.ts, a leaf the runtime's
 * AuthZEN routes use too) with the server's namespace in place of `authzen.`,
 * so a server's names stay in its own namespace, and an empty name refused as
 * well (a mapping must name an action).
 */
import { MAX_AUTHZEN_ACTION_NAME, namespacedActionOf } from '../../compiler/patterns/action-names.js';

export { MAX_AUTHZEN_ACTION_NAME };

/**
 * The decision's action for a name a server declared: the name itself when it
 * is an action of the grammar (`namespace.verb`, whichever namespace: the
 * caller checks it), else `<namespace>.` + the name made an action part;
 * undefined when the name is empty or longer than 200 characters.
 *
 * @example
 * ```ts
 * console.log(serverAction('bank', 'small_transfer'), serverAction('bank', 'GET'), serverAction('bank', 'documents/read'), serverAction('bank', 'authzen.get')); // => bank.small_transfer bank.get bank.documents_read authzen.get
 * ```
 */
export function serverAction(namespace: string, name: string): string | undefined {
  return name === '' ? undefined : namespacedActionOf(namespace, name);
}
