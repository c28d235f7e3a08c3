/** List query strings (docs/api.md#lists): the shared schema and the page they ask for. */
import { loadSchema } from '../../compiler/index.js';
import type { PageParams } from '../store/pagination.js';

export const listQuerySchema = loadSchema('api/list-query');

export interface ListQuery {
  limit?: number;
  starting_after?: string;
  agent_id?: string;
  type?: string;
}

export function pageParams(query: ListQuery): PageParams {
  return { limit: query.limit ?? 20, startingAfter: query.starting_after ?? null };
}
