/** List query strings (docs/api.md#lists): the shared schema and the page they ask for. */
import { loadSchema } from '../../compiler/index.js';
import type { ListQuery } from '../../clients/typescript/wire.js';
import type { PageParams } from '../store/pagination.js';

export const listQuerySchema = loadSchema('api/list-query');

/** The list parameters of every list's query string (schemas/api/list-query.schema.json). */
export type { ListQuery };

export function pageParams(query: Pick<ListQuery, 'limit' | 'starting_after'>): PageParams {
  return { limit: query.limit ?? 20, startingAfter: query.starting_after ?? null };
}
