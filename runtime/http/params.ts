/**
 * The path parameter of by-id routes: any string up to 100 characters. An
 * empty or made-up id is the resource's 404, never a 400 (the id names nothing).
 */
export const idParams = {
  type: 'object',
  properties: { id: { type: 'string', maxLength: 100 } },
  required: ['id'],
} as const;
