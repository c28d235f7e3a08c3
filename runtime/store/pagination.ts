/**
 * Cursor pagination (docs/api.md#lists): newest first by `seq`, `limit` 1..100,
 * `starting_after` = the id of the last item of the previous page. One more row
 * than asked is read to tell `has_more`. A `starting_after` that names nothing
 * of the list (in this account and environment) is an UnknownCursorError (the
 * HTTP layer answers 400 validation.invalid_field), not an empty page.
 */
export interface PageParams {
  limit: number;
  startingAfter: string | null;
}

export interface Page<T> {
  data: T[];
  has_more: boolean;
}

/** `starting_after` is not the id of an item of the list. */
export class UnknownCursorError extends Error {
  constructor(readonly cursor: string) {
    super(`starting_after ${JSON.stringify(cursor)} is not an item of this list`);
    this.name = 'UnknownCursorError';
  }
}

/**
 * One page of `query`; `cursorExists` is asked only when a cursor gave no row
 * at all (the cursor was the last item, or names nothing: then UnknownCursorError).
 *
 * @example
 * pageQuery(page, (cursor, limit) => sql`select ... where seq < (select seq ... id = ${cursor}) limit ${limit}`,
 *   (cursor) => exists(sql`select 1 from agents where ... and agent_id = ${cursor}`));
 */
export async function pageQuery<T extends { seq: number }>(
  page: PageParams,
  query: (cursor: string | null, limit: number) => Promise<T[]>,
  cursorExists: (cursor: string) => Promise<boolean>,
): Promise<Page<Omit<T, 'seq'>>> {
  const rows = await query(page.startingAfter, page.limit + 1);
  if (rows.length === 0 && page.startingAfter !== null && !(await cursorExists(page.startingAfter)))
    throw new UnknownCursorError(page.startingAfter);
  const has_more = rows.length > page.limit;
  return { data: rows.slice(0, page.limit).map(({ seq: _seq, ...rest }) => rest as Omit<T, 'seq'>), has_more };
}

/** Whether a `select 1 ...` found a row. */
export async function exists(rows: PromiseLike<readonly unknown[]>): Promise<boolean> {
  return (await rows).length > 0;
}
