/**
 * The upstream's tool names as one session of the proxy last read them, and
 * the tools among them whose actions collide (docs/mcp.md#what-the-proxy-does): every tool of a colliding set is hidden from listings and its
 * calls refused with `mcp_proxy.tool_collision`, no decision requested. The
 * names come from the client's own `tools/list` answers and from the proxy's
 * re-reading on the upstream's `notifications/tools/list_changed`.
 */
import type { ActionMap } from './actions.js';

export class ToolNames {
  /** Tools of the latest listing whose action collides with another's, and that action. */
  #colliding = new Map<string, string>();
  /** The tool names of the latest listing, every page read so far. */
  #listed = new Set<string>();

  constructor(
    private readonly actions: ActionMap,
    private readonly log: (line: string) => void,
  ) {}

  /**
   * Notes the tools a listing offers; a listing's later pages add to its first.
   *
   * @example
   * ```ts
   * const names = new ToolNames(new ActionMap({ server: 'notes', tools: {} }), console.error);
   * names.note(['add_note', 'Add-Note']);
   * console.log(names.collision('Add-Note')); // => notes.add_note
   * ```
   */
  note(names: readonly string[], page: { firstPage: boolean } = { firstPage: true }): void {
    if (page.firstPage) this.#listed = new Set();
    for (const name of names) this.#listed.add(name);
    const next = new Map<string, string>();
    for (const { action, tools } of this.actions.collisions([...this.#listed])) for (const t of tools) next.set(t, action);
    for (const [tool, action] of next) if (!this.#colliding.has(tool)) this.log(`tool "${tool}" is hidden and refused: its action ${action} collides with another tool's`);
    this.#colliding = next;
  }

  /** The action a tool collides on, or undefined when it does not collide. */
  collision(tool: string): string | undefined {
    return this.#colliding.get(tool);
  }
}
