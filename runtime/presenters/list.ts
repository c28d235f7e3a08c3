/** List responses (contract: Lists). */
import type { List } from '../../clients/typescript/wire.js';

/** The list envelope (schemas/api/answers/list.schema.json) with items of one type. */
export type ListBody<T> = Omit<List, 'data'> & { data: T[] };

export function listBody<T>(data: T[], hasMore: boolean, url: string): ListBody<T> {
  return { object: 'list', data, has_more: hasMore, url };
}
