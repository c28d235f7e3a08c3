/** List responses (docs/api.md#lists). */
import type { List } from '../../clients/typescript/wire.js';

/** The list envelope (schemas/api/answers/list.schema.json) with items of one type. */
export type ListBody<T> = Omit<List, 'data'> & { data: T[] };

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
