/**
 * The type tests read a parsed JSON answer as, where no generated wire type
 * (clients/typescript/wire.ts) is named: an object whose properties, at any
 * depth, may be read without narrowing first. The assertions (`toEqual`,
 * `toMatchObject`, the OpenAPI answer checks) hold the shape at run time; a
 * test that relies on a known shape names its wire type instead
 * (`json<Decision>(r)`, `decide()` of test/helpers/kit.ts).
 *
 * This is the tests' one explicit `any` (ESLint's no-explicit-any is on for
 * test/): a recursive JSON type without it would make every `answer.data[0].id`
 * a chain of type guards, some 800 of them, that check nothing `expect` does
 * not.
 *
 * @example
 *   const body = JSON.parse('{"data":[{"id":"dec_1"}]}') as JsonObject;
 *   body.data[0].id; // 'dec_1'
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed answers are read loosely and checked by expect() (see above)
export type JsonObject = Record<string, any>;
