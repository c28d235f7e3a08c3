/**
 * One permit check for both verifiers (permit-verifier/permit-token.ts and
 * permit-verifier/permit-claims.ts): tokens signed with the runtime's own key, their
 * header or claims varied, go to POST /v1/permits/verify and to the verifier
 * library (the runtime listening on 127.0.0.1, its JWKS fetched over HTTP, the
 * library following the runtime's clock); both must answer the same code, and
 * the same claims when the token is valid. Among the cases, what only the
 * library refused before the check was shared: malformed `res`/`sid`/`obo`/`args`,
 * a future `nbf`, a `crit` header. On both stores.
 */
import sodium from 'sodium-native';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { argsDigest, createPermitVerifier, PermitError, type PermitVerifier } from '../../permit-verifier/index.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
const OTHER_ACCOUNT = 'acc_someoneelse000000000001';

/** A token case: what to change in the header and the claims of a valid permit, and the code both verifiers must answer (`valid`: 200 / resolves). */
interface Case {
  name: string;
  header?: Record<string, unknown>;
  claims?: (now: number) => Record<string, unknown>;
  /** The whole payload instead of changed claims. */
  payload?: unknown;
  expected: 'valid' | 'auth.signature_invalid' | 'auth.expired';
}

const CASES: Case[] = [
  { name: 'the valid permit', expected: 'valid' },
  {
    name: 'sid, obo and args as the service signs them',
    claims: () => ({ sid: 'run-1', obo: 'user-1', args: argsDigest({ path: 'a' }) }),
    expected: 'valid',
  },
  { name: 'an nbf that has come', claims: (now) => ({ nbf: now - 10 }), expected: 'valid' },
  { name: 'typ application/permit+jwt (RFC 7515 4.1.9)', header: { typ: 'application/permit+jwt' }, expected: 'valid' },
  { name: 'an unknown claim (dropped)', claims: () => ({ extra: 'x' }), expected: 'valid' },
  { name: 'sid not a string', claims: () => ({ sid: 5 }), expected: 'auth.signature_invalid' },
  { name: 'sid empty', claims: () => ({ sid: '' }), expected: 'auth.signature_invalid' },
  { name: 'obo not a string', claims: () => ({ obo: ['user-1'] }), expected: 'auth.signature_invalid' },
  { name: 'args not a string', claims: () => ({ args: 42 }), expected: 'auth.signature_invalid' },
  { name: 'res empty', claims: () => ({ res: '' }), expected: 'auth.signature_invalid' },
  { name: 'an nbf still to come', claims: (now) => ({ nbf: now + 60 }), expected: 'auth.signature_invalid' },
  { name: 'an nbf far beyond any date', claims: () => ({ nbf: 1e300 }), expected: 'auth.signature_invalid' },
  { name: 'nbf not a number', claims: () => ({ nbf: 'soon' }), expected: 'auth.signature_invalid' },
  { name: 'env neither test nor live', claims: () => ({ env: 'prod' }), expected: 'auth.signature_invalid' },
  { name: 'eff deny', claims: () => ({ eff: 'deny' }), expected: 'auth.signature_invalid' },
  { name: 'no jti', claims: () => ({ jti: undefined }), expected: 'auth.signature_invalid' },
  { name: 'iat not a number', claims: () => ({ iat: '1' }), expected: 'auth.signature_invalid' },
  { name: 'another issuer', claims: () => ({ iss: 'http://127.0.0.1:1' }), expected: 'auth.signature_invalid' },
  { name: 'another account', claims: () => ({ acc: OTHER_ACCOUNT }), expected: 'auth.signature_invalid' },
  { name: 'the live environment', claims: () => ({ env: 'live' }), expected: 'auth.signature_invalid' },
  {
    name: 'another account, and expired: the tenant first',
    claims: (now) => ({ acc: OTHER_ACCOUNT, exp: now - 10 }),
    expected: 'auth.signature_invalid',
  },
  { name: 'expired', claims: (now) => ({ exp: now - 1 }), expected: 'auth.expired' },
  { name: 'expired before any date', claims: () => ({ exp: -1e300 }), expected: 'auth.expired' },
  { name: 'claims that are an array', payload: [1, 2], expected: 'auth.signature_invalid' },
  { name: 'claims that are null', payload: null, expected: 'auth.signature_invalid' },
  { name: 'a crit header', header: { crit: ['exp'] }, expected: 'auth.signature_invalid' },
  { name: 'typ JWT', header: { typ: 'JWT' }, expected: 'auth.signature_invalid' },
  { name: 'alg ES256 over an EdDSA signature', header: { alg: 'ES256' }, expected: 'auth.signature_invalid' },
  { name: 'an empty kid', header: { kid: '' }, expected: 'auth.signature_invalid' },
];

describe.each(STORE_KINDS)(
  'one permit check for POST /v1/permits/verify and the verifier library (%s store)',
  (kind) => {
    let rt: TestRuntime;
    let library: PermitVerifier;

    beforeAll(async () => {
      rt = await startRuntime(kind);
      await rt.app.listen({ port: 0, host: '127.0.0.1' });
      const address = rt.app.server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      library = createPermitVerifier({
        jwksUrl: `http://127.0.0.1:${port}/.well-known/jwks.json`,
        issuer: rt.services.config.baseUrl,
        account: rt.accountId,
        environment: 'test',
        now: () => rt.clock.now(),
      });
    });
    afterAll(() => rt?.close());

    /** A token of the case, signed with the runtime's current key: only the case's changes differ from a permit the service would sign. */
    function tokenOf(c: Case): string {
      const now = Math.floor(rt.clock.now() / 1000);
      const base = {
        iss: rt.services.config.baseUrl,
        sub: 'bot-1',
        act: 'orders.read',
        res: 'order:1',
        eff: 'allow',
        dec: 'dec_onecheck0000000000000001',
        acc: rt.accountId,
        env: 'test',
        iat: now,
        exp: now + 300,
        jti: 'pmt_onecheck00000000000000001',
      };
      const payload = 'payload' in c ? c.payload : JSON.parse(JSON.stringify({ ...base, ...c.claims?.(now) }));
      const signer = rt.services.ring.signer();
      const input = `${b64({ alg: 'EdDSA', kid: signer.kid, typ: 'permit+jwt', ...c.header })}.${b64(payload)}`;
      const signature = Buffer.alloc(sodium.crypto_sign_BYTES);
      sodium.crypto_sign_detached(signature, Buffer.from(input), signer.signingKey);
      return `${input}.${signature.toString('base64url')}`;
    }

    it('both verifiers answer every case alike, as expected', async () => {
      for (const c of CASES) {
        const token = tokenOf(c);
        const route = await rt.call(rt.testKey, { method: 'POST', url: '/v1/permits/verify', payload: { token } });
        const byLibrary = await library.verify(token).then(
          (claims) => ({ code: 'valid', claims }),
          (error: unknown) => {
            if (!(error instanceof PermitError)) throw error;
            return { code: error.code, claims: undefined };
          },
        );
        expect(byLibrary.code, `library: ${c.name}`).toBe(c.expected);
        if (c.expected === 'valid') {
          expect(route.statusCode, `route: ${c.name}: ${route.body}`).toBe(200);
          // decision.not_found: the claims are fine, their decision was never made (this token was signed here).
          expect(json(route), c.name).toEqual({
            object: 'permit_verification',
            valid: false,
            reason: 'decision.not_found',
            claims: byLibrary.claims,
          });
        } else {
          expect(route.statusCode, `route: ${c.name}: ${route.body}`).toBe(401);
          expect(json(route).error.code, `route: ${c.name}`).toBe(c.expected);
        }
      }
    });

    it('a permit the service issued verifies on both, to the same claims', async () => {
      await rt.setPolicies([{ effect: 'allow', actions: ['files.read'] }]);
      const args = { path: 'notes/a.txt' };
      const body = {
        agent_id: 'bot-2',
        action: 'files.read',
        session_id: 'run-7',
        on_behalf_of: 'user-3',
        args_digest: argsDigest(args),
      };
      const decision = json(await rt.call(rt.testKey, { method: 'POST', url: '/v1/decisions', payload: body }));
      const route = json(
        await rt.call(rt.testKey, {
          method: 'POST',
          url: '/v1/permits/verify',
          payload: { token: decision.permit_token },
        }),
      );
      const claims = await library.verify(decision.permit_token, { action: 'files.read', arguments: args });
      expect(claims).toMatchObject({ sid: 'run-7', obo: 'user-3', args: argsDigest(args), dec: decision.id });
      expect(route).toEqual({ object: 'permit_verification', valid: true, claims });
    });
  },
);
