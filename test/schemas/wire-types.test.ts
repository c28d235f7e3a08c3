/**
 * clients/typescript/wire.ts is what `npm run gen:types` writes from the answer
 * and request schemas now: a schema changed without regenerating (or the module edited by
 * hand) fails here. The generator is run in-process on the sources.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { requestSchemas, WIRE_MODULE, wireTypesSource } from '../../scripts/gen-wire-types.js';

describe('the generated wire types', () => {
  it(`${WIRE_MODULE} is up to date with schemas/api (run npm run gen:types)`, async () => {
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

  it('holds one type per request body and query schema of schemas/api/, named for its file, with its fields', async () => {
    const source = await wireTypesSource();
    const requests = requestSchemas();
    expect(Object.keys(requests)).toEqual(expect.arrayContaining(['DecisionRequest', 'DecisionResolveRequest', 'DecisionOutputRequest', 'SessionLabelsRequest', 'AuthzenEvaluationRequest', 'BudgetRemainingQuery']));
    expect(Object.keys(requests)).not.toContain('AdminRequest');
    for (const [name, schema] of Object.entries(requests)) {
      const body = new RegExp(`export interface ${name} \\{([\\s\\S]*?)\\n\\}`).exec(source)?.[1];
      expect(body, name).toBeDefined();
      for (const field of Object.keys((schema.properties ?? {}) as object)) expect(body, `${name}.${field}`).toMatch(new RegExp(`\\n  ${field}\\??:`));
    }
    // additionalProperties: false is a closed type; an object that says nothing of other members (AuthZEN's) is open.
    const decision = /export interface DecisionRequest \{([\s\S]*?)\n\}/.exec(source)![1]!;
    expect(decision).not.toMatch(/\n {2}\[k: string\]: unknown;/);
    expect(decision).toMatch(/context\?: \{\n\s+\[k: string\]: unknown;\n\s+\} \| null;/);
    expect(/export interface AuthzenEvaluationRequest \{([\s\S]*?)\n\}/.exec(source)![1]).toMatch(/\n {2}\[k: string\]: unknown;/);
  }, 60_000);
});
