/**
 * clients/typescript/wire.ts is what `npm run gen:types` writes from the answer
 * schemas now: a schema changed without regenerating (or the module edited by
 * hand) fails here. The generator is run in-process on the sources.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { WIRE_MODULE, wireTypesSource } from '../../scripts/gen-wire-types.js';

describe('the generated wire types', () => {
  it(`${WIRE_MODULE} is up to date with schemas/api/answers (run npm run gen:types)`, async () => {
    const committed = readFileSync(new URL(`../../${WIRE_MODULE}`, import.meta.url), 'utf8');
    const fresh = await wireTypesSource();
    expect(committed === fresh, 'clients/typescript/wire.ts is stale: run npm run gen:types').toBe(true);
  }, 60_000);

  it('holds one type per answer schema, named by its title', async () => {
    const source = await wireTypesSource();
    for (const name of ['Decision', 'DecisionList', 'Review', 'Policy', 'PolicyCreated', 'BundleStatus', 'Agent', 'WebhookEndpoint', 'WebhookDelivery', 'Event', 'Budget', 'DecisionStats', 'PermitVerification', 'AuthzenAnswer', 'AuthzenTask', 'List']) {
      expect(source, name).toContain(`export interface ${name} {`);
    }
    // The error body is ErrorBody in TypeScript (Error would shadow the global where imported).
    expect(source).toContain('export interface ErrorBody {');
    expect(source).not.toMatch(/export interface Error \{/);
    // A field of a schema is a field of the type: the decision's review is the Review type or null.
    expect(source).toMatch(/review: null \| Review;|review: Review \| null;/);
  }, 60_000);
});
