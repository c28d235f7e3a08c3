/** List responses (docs/api.md#lists). */
export interface ListBody<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
  url: string;
}

export function listBody<T>(data: T[], hasMore: boolean, url: string): ListBody<T> {
  return { object: 'list', data, has_more: hasMore, url };
}
