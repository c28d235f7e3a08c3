/**
 * The upstream's tool names as one session of the proxy last read them, and
 * the tools among them whose actions collide (docs/mcp.md#what-the-proxy-does): every tool of a colliding set is hidden from listings and its
 * calls refused with `mcp_proxy.tool_collision`, no decision requested. The
 * names come from the client's own `tools/list` answers and from the proxy's
 * re-reading on the upstream's `notifications/tools/list_changed`.
 */
import type { ActionMap } from './actions.js';
import { PagedListing, type ListingPage } from './paged-listing.js';

export class ToolNames {
  /** Tools of the latest listing whose action collides with another's, and that action. */
  #colliding = new Map<string, string>();
  /** The tool names of the latest listing, paged as the client reads it (clients/mcp-proxy/paged-listing.ts). */
  #listed = new PagedListing<true>();

  constructor(
    private readonly actions: ActionMap,
    private readonly log: (line: string) => void,
  ) {}

  /**
   * Notes the tools a listing offers; a listing's later pages add to its first,
   * and it replaces the previous one once its last page is read (a tool on a
   * page the client has not read yet still counts for collisions).
   *
   * @example
   * ```ts
   * const names = new ToolNames(new ActionMap({ server: 'notes', tools: {} }), console.error);
   * names.note(['add_note', 'Add-Note']);
   * console.log(names.collision('Add-Note')); // => notes.add_note
   * ```
   */
  note(names: readonly string[], page: ListingPage = { firstPage: true }): void {
    this.#listed.note(
      names.map((name) => [name, true] as const),
      page,
    );
    const next = new Map<string, string>();
    for (const { action, tools } of this.actions.collisions(this.#listed.names()))
      for (const t of tools) next.set(t, action);
    for (const [tool, action] of next)
      if (!this.#colliding.has(tool))
        this.log(`tool "${tool}" is hidden and refused: its action ${action} collides with another tool's`);
    this.#colliding = next;
  }

  /** The action a tool collides on, or undefined when it does not collide. */
  collision(tool: string): string | undefined {
    return this.#colliding.get(tool);
  }
}
