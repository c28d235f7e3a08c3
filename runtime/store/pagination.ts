/**
 * Cursor pagination (contract: Lists): newest first by `seq`, `limit` 1..100,
 * `starting_after` = the id of the last item of the previous page. One more row
 * than asked is read to tell `has_more`.
 */
export interface PageParams {
  limit: number;
  startingAfter: string | null;
}

export interface Page<T> {
  data: T[];
  has_more: boolean;
}

export async function pageQuery<T extends { seq: number }>(
  page: PageParams,
  query: (cursor: string | null, limit: number) => Promise<T[]>,
): Promise<Page<Omit<T, 'seq'>>> {
  const rows = await query(page.startingAfter, page.limit + 1);
  const has_more = rows.length > page.limit;
  return { data: rows.slice(0, page.limit).map(({ seq: _seq, ...rest }) => rest as Omit<T, 'seq'>), has_more };
}
