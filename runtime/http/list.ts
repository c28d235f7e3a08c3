/** List responses (contract: Lists) and the shared query-string schema. */
import { loadSchema } from '../../compiler/schemas.js';
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

export function listBody<T>(data: T[], hasMore: boolean, url: string): { object: 'list'; data: T[]; has_more: boolean; url: string } {
  return { object: 'list', data, has_more: hasMore, url };
}
