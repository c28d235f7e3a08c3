/**
 * What a session last learnt from the upstream's `tools/list`, read page by
 * page by the client: a listing's pages add to its first, and the whole listing
 * replaces the previous one only when its last page is read. Until then an
 * entry the listing has not named yet keeps its value, so a client that reads
 * only the first page does not change how the tools on the other pages are
 * treated (their declared mappings, their collisions). A later page whose first
 * page this session did not read updates the entries it names.
 *
 * @example
 * ```ts
 * const listing = new PagedListing<string>();
 * listing.note([['a', 'x'], ['b', 'y']]);
 * listing.note([['a', 'z']], { firstPage: true, lastPage: false });
 * console.log(listing.get('a'), listing.get('b')); // => z y
 * listing.note([], { firstPage: false, lastPage: true });
 * console.log(listing.get('b')); // => undefined
 * ```
 */
/** Which page of a listing a `tools/list` answer is (a whole listing: the first and the last). */
export interface ListingPage {
  firstPage: boolean;
  /** Absent: the last (no `nextCursor`). */
  lastPage?: boolean;
}

export class PagedListing<V> {
  /** By tool name, as the last complete listing said. */
  #complete = new Map<string, V>();
  /** The listing being read (its pages so far), or undefined. */
  #reading: Map<string, V> | undefined;

  /** Notes one page of a listing (a whole listing by default). */
  note(entries: Iterable<readonly [string, V]>, page: ListingPage = { firstPage: true }): void {
    if (page.firstPage) this.#reading = new Map();
    const target = this.#reading ?? this.#complete;
    for (const [name, value] of entries) target.set(name, value);
    if (this.#reading !== undefined && (page.lastPage ?? true)) {
      this.#complete = this.#reading;
      this.#reading = undefined;
    }
  }

  /** The tool's value as the listing being read says, else as the last complete one did. */
  get(name: string): V | undefined {
    return this.#reading?.has(name) ? this.#reading.get(name) : this.#complete.get(name);
  }

  /** Every tool named by the last complete listing or by the one being read. */
  names(): string[] {
    return [...new Set([...this.#complete.keys(), ...(this.#reading?.keys() ?? [])])];
  }
}
