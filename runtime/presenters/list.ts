/** List responses (contract: Lists). */
export interface ListBody<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
  url: string;
}

/** A list that is never paged: `object` and `data` only (GET /v1/budgets/remaining, POST /v1/actions/possible). */
export interface DataList<T> {
  object: 'list';
  data: T[];
}

export function listBody<T>(data: T[], hasMore: boolean, url: string): ListBody<T> {
  return { object: 'list', data, has_more: hasMore, url };
}

/**
 * A list that is never paged.
 *
 * @example
 * dataList([{ action: 'orders.read', possible: true }]); // => { object: 'list', data: [{ action: 'orders.read', possible: true }] }
 */
export function dataList<T>(data: T[]): DataList<T> {
  return { object: 'list', data };
}
