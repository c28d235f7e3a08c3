/**
 * JSON Schemas made strict for answer tests: every object schema that lists
 * `properties` and says nothing of other fields is closed
 * (`additionalProperties: false`), so an answer must name only documented
 * fields. Schemas combined with allOf/anyOf/oneOf are left open (closing one
 * branch would refuse the other's fields).
 *
 * @example
 * closeObjects({ type: 'object', properties: { id: { type: 'string' } } });
 * // => { type: 'object', properties: { id: { type: 'string' } }, additionalProperties: false }
 */
export function closeObjects(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closeObjects);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    out[k] =
      k === 'properties'
        ? Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([p, s]) => [p, closeObjects(s)]))
        : closeObjects(v);
  }
  if (out.properties && out.additionalProperties === undefined && !out.allOf && !out.anyOf && !out.oneOf)
    out.additionalProperties = false;
  return out;
}
