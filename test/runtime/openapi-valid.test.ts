/**
 * The OpenAPI document served at GET /v1/openapi.json is valid OpenAPI 3.1, as
 * a checker from outside the project reads it: @apidevtools/swagger-parser
 * validates it against the OpenAPI 3.1 schema and resolves every `$ref` (the
 * answer components come from schemas/api/answers/). A document with a known
 * fault (a Media Type Object with a `description`, which 3.1 does not allow) is
 * refused, so the check is not vacuous.
 */
import SwaggerParser from '@apidevtools/swagger-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';
import type { JsonObject } from '../helpers/json.js';

type Json = JsonObject;

describe('the OpenAPI document is valid OpenAPI 3.1 (swagger-parser)', () => {
  let rt: TestRuntime;
  let doc: Json;

  beforeAll(async () => {
    // The document does not depend on the store: the embedded one is enough.
    rt = await startRuntime('embedded');
    doc = json(await rt.app.inject({ method: 'GET', url: '/v1/openapi.json' }));
  });
  afterAll(() => rt?.close());

  it('validates against the OpenAPI 3.1 schema, every $ref resolved', async () => {
    expect(doc.openapi).toBe('3.1.0');
    // validate() dereferences in place: give it a copy.
    const checked = (await SwaggerParser.validate(structuredClone(doc) as never)) as Json;
    expect(Object.keys(checked.paths)).toEqual(Object.keys(doc.paths));
    // The answer components are resolved: the decision answer's schema carries the decision's fields.
    const decision = checked.paths['/v1/decisions'].post.responses['200'].content['application/json'].schema;
    expect(Object.keys(decision.properties)).toEqual(
      expect.arrayContaining(['id', 'object', 'effect', 'review', 'metadata']),
    );
    expect(decision.properties.review.oneOf[1].properties.status.enum).toEqual(['open', 'approved', 'denied']);
  });

  it('the NDJSON export documents its line schema without a description on the media type', () => {
    const answer = doc.paths['/v1/decisions/export'].get.responses['200'];
    expect(answer.content['application/x-ndjson']).toEqual({ schema: { $ref: '#/components/schemas/Decision' } });
    expect(answer.description).toContain('one JSON document of this schema per line');
  });

  it('refuses a document with a Media Type Object that has a description (the fault it had)', async () => {
    const bad = structuredClone(doc);
    bad.paths['/v1/decisions/export'].get.responses['200'].content['application/x-ndjson'].description =
      'One JSON document per line';
    await expect(SwaggerParser.validate(bad as never)).rejects.toThrow(/x-ndjson/);
  });

  it('refuses a $ref to a component that does not exist', async () => {
    const bad = structuredClone(doc);
    bad.paths['/v1/decisions'].post.responses['200'].content['application/json'].schema = {
      $ref: '#/components/schemas/NoSuchAnswer',
    };
    await expect(SwaggerParser.validate(bad as never)).rejects.toThrow(/NoSuchAnswer/);
  });
});
