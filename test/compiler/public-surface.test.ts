/**
 * The published surface, as a user of the package gets it: everything here is
 * imported by the package's own name (`agent-authz/compiler`, `/verifier`,
 * `/webhooks`), which Node resolves through package.json "exports" to dist/.
 * Needs `npx tsc -p tsconfig.build.json` first.
 *
 * Compiles the example policies of examples/, decides requests, writes and loads
 * a bundle (in-process and through the CLI's `compile`), reports an invalid
 * policy, verifies permit tokens against a JWKS served on 127.0.0.1, and checks
 * webhook signatures against an HMAC computed here.
 */
import { createHash, createHmac, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  compileItems,
  compileSources,
  createBundle,
  evaluate,
  explain,
  findYamlFiles,
  hasErrors,
  isPolicyFile,
  loadBundle,
  main,
  policySetHash,
  readPolicyValue,
  readSource,
  type CliIo,
  type EvaluationInput,
  type DecisionTable,
} from 'agent-authz/compiler';
import {
  createPermitVerifier,
  PermitError,
  PermitExpiredError,
  PermitMismatchError,
  PermitSignatureInvalidError,
} from 'agent-authz/verifier';
import { signWebhookBody, verifyWebhookSignature } from 'agent-authz/webhooks';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function captureIo(): CliIo & { lines: string[] } {
  const lines: string[] = [];
  return { lines, out: (t) => lines.push(t), err: (t) => lines.push(t), isTTY: false, cwd: ROOT };
}

/** Every policy file of one example folder, compiled. */
function compileExample(name: string) {
  const files = findYamlFiles([join('examples', name)], ROOT).filter(isPolicyFile);
  return { files, result: compileSources(files.map((f) => readSource(f, ROOT))) };
}

function table(name: string): DecisionTable {
  const { result } = compileExample(name);
  if (!result.table) throw new Error(`examples/${name} did not compile: ${JSON.stringify(result.diagnostics)}`);
  return result.table;
}

describe('the package names resolve to the built entry points', () => {
  it.each([
    ['compiler', 'compiler'],
    ['verifier', 'permit-verifier'],
    ['webhooks', 'webhook-receiver'],
  ])('agent-authz/%s -> dist/%s/index.js', (entry, folder) => {
    expect(fileURLToPath(import.meta.resolve(`agent-authz/${entry}`))).toBe(join(ROOT, 'dist', folder, 'index.js'));
  });
});

describe('agent-authz/compiler', () => {
  it.each(['support', 'purchasing', 'infrastructure'])(
    'compiles the policies of examples/%s without errors',
    (name) => {
      const { files, result } = compileExample(name);
      expect(files.length).toBeGreaterThan(0);
      expect(result.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
      expect(result.table?.rows.length).toBe(result.policies.length);
      expect(result.policies.length).toBeGreaterThan(1);
    },
  );

  it("passes the examples' own policy tests through the CLI entry (authz test)", () => {
    const io = captureIo();
    expect(main(['test', 'examples'], io), io.lines.join('\n')).toBe(0);
  });

  it('decides requests against the support example', () => {
    const support = table('support');
    const refund: EvaluationInput = {
      agent_id: 'support-bot-1',
      action: 'payments.refund',
      resource: 'order:100482',
      amount: 20,
      context: { channel: 'chat', customer_email: 'dana.kim@mail.example' },
    };
    expect(evaluate(support, refund)).toMatchObject({
      effect: 'allow',
      reason: 'policy.matched',
      policy_id: 'pol_support_refund_small_chat',
      warnings: [],
    });
    expect(evaluate(support, { ...refund, amount: 120 })).toMatchObject({
      effect: 'review',
      policy_id: 'pol_support_refund_large_review',
    });
    const deleted = evaluate(support, {
      agent_id: 'support-tier2-3',
      action: 'accounts.delete',
      resource: 'account:acc_1',
    });
    expect(deleted).toMatchObject({ effect: 'deny', policy_id: 'pol_support_account_deletion_deny' });
    expect(deleted.warnings.map((w) => w.code)).toEqual(['policy.conflict']);
    expect(
      evaluate(support, { agent_id: 'billing-bot', action: 'payments.refund', resource: 'order:1', amount: 5 }),
    ).toMatchObject({
      effect: 'deny',
      reason: 'policy.not_found',
      policy_id: null,
    });
    const why = explain(support, { ...refund, amount: 120 });
    expect(why.evaluation.policy_id).toBe('pol_support_refund_large_review');
    expect(why.trace.find((t) => t.policy.id === 'pol_support_refund_small_chat')?.outcome).toBe('condition');
  });

  describe('bundles', () => {
    let dir: string;
    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), 'authz-surface-'));
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    const requests: EvaluationInput[] = [
      {
        agent_id: 'support-bot-1',
        action: 'orders.read',
        resource: 'order:1',
        context: { channel: 'chat', customer_email: 'a@mail.example' },
      },
      {
        agent_id: 'support-bot-1',
        action: 'payments.refund',
        resource: 'order:1',
        amount: 30,
        context: { channel: 'chat' },
      },
      {
        agent_id: 'support-bot-1',
        action: 'payments.refund',
        resource: 'order:1',
        amount: 30,
        context: { order_source: 'marketplace-ebay' },
      },
      { agent_id: 'support-tier2-1', action: 'accounts.lock', resource: 'account:9' },
      { agent_id: 'other', action: 'orders.read', resource: 'order:1' },
    ];

    it('writes a bundle, loads it back from its file, and decides the same', () => {
      const { result } = compileExample('support');
      const bundle = createBundle(result.table!);
      const file = join(dir, 'support.bundle.json');
      writeFileSync(file, `${JSON.stringify(bundle)}\n`);
      const loaded = loadBundle(JSON.parse(readFileSync(file, 'utf8')));
      if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems));
      expect(loaded.bundle.hash).toBe(policySetHash(result.policies));
      expect(loaded.bundle.policies.map((p) => p.id)).toEqual(result.policies.map((p) => p.id).sort());
      for (const request of requests) expect(evaluate(loaded.table, request)).toEqual(evaluate(result.table!, request));
    });

    it('loads the bundle `authz compile -o` writes, and refuses it once altered', () => {
      const file = join(dir, 'cli.bundle.json');
      const io = captureIo();
      expect(main(['compile', 'examples/support', '-o', file], io), io.lines.join('\n')).toBe(0);
      const value = JSON.parse(readFileSync(file, 'utf8')) as { policies: Array<{ priority: number }> };
      const loaded = loadBundle(value);
      expect(loaded.ok).toBe(true);
      expect(loaded.ok && evaluate(loaded.table, requests[1]!).policy_id).toBe('pol_support_refund_small_chat');

      value.policies[0]!.priority += 1;
      const altered = loadBundle(value);
      expect(altered.ok).toBe(false);
      expect(!altered.ok && altered.problems.map((p) => [p.code, p.path])).toEqual([['bundle.invalid', '/hash']]);
    });
  });

  it('reports an invalid policy file with codes, lines and columns, and no table', () => {
    const text = [
      'name: bad-refunds',
      'effect: permit',
      'actions: [payments.refund]',
      "condition: amount <= 'fifty'",
      '',
    ].join('\n');
    const result = compileSources([{ file: 'policies/bad.yaml', text }]);
    expect(result.table).toBeUndefined();
    expect(hasErrors(result.diagnostics)).toBe(true);
    expect(result.diagnostics.map((d) => `${d.file}:${d.line}:${d.col} ${d.code}`)).toEqual([
      'policies/bad.yaml:2:9 policy.invalid_field',
      'policies/bad.yaml:4:19 condition.type',
    ]);
  });

  it('reports an invalid API body and a duplicate across policies', () => {
    const body = readPolicyValue({
      name: 'x',
      effect: 'allow',
      actions: ['Payments.Refund'],
      rate_limit: { per_week: 3 },
    });
    expect(body.items).toEqual([]);
    expect(body.diagnostics.map((d) => d.path).sort()).toEqual(['/actions/0', '/rate_limit/per_week']);
    const a = readPolicyValue({ id: 'pol_a', name: 'a', effect: 'allow', actions: ['orders.read'] });
    const b = readPolicyValue({ id: 'pol_a', name: 'b', effect: 'deny', actions: ['orders.read'] });
    const compiled = compileItems([...a.items, ...b.items]);
    expect(compiled.table).toBeUndefined();
    expect(compiled.diagnostics.map((d) => d.code)).toEqual(['policy.duplicate_id']);
  });
});

// --- permit tokens: an Ed25519 key, its JWKS on 127.0.0.1, tokens signed here --------

const b64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

function signPermit(privateKey: KeyObject, kid: string, claims: Record<string, unknown>): string {
  const input = `${b64url({ alg: 'EdDSA', kid, typ: 'permit+jwt' })}.${b64url(claims)}`;
  return `${input}.${sign(null, Buffer.from(input), privateKey).toString('base64url')}`;
}

describe('agent-authz/verifier', () => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const { x } = publicKey.export({ format: 'jwk' }) as { x: string };
  const kid = createHash('sha256')
    .update(JSON.stringify({ crv: 'Ed25519', kty: 'OKP', x }))
    .digest('base64url');
  const issuer = 'http://127.0.0.1:8080';
  let server: Server;
  let jwksUrl: string;
  let fetches = 0;

  beforeAll(async () => {
    server = createServer((req, res) => {
      fetches++;
      if (req.url !== '/.well-known/jwks.json') return void res.writeHead(404).end();
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ keys: [{ kty: 'OKP', crv: 'Ed25519', x, kid, use: 'sig', alg: 'EdDSA' }] }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    jwksUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const claims = (overrides: Record<string, unknown> = {}) => {
    const iat = Math.floor(Date.now() / 1000);
    return {
      iss: issuer,
      sub: 'support-bot-1',
      act: 'payments.refund',
      res: 'order:100482',
      eff: 'allow',
      dec: 'dec_8f3kq0a1b2c3d4e5f6g7h8i9',
      acc: 'acc_northpeak0000000000001',
      env: 'test',
      iat,
      exp: iat + 300,
      jti: 'pmt_a1b2c3d4e5f6g7h8i9j0k1l2',
      ...overrides,
    };
  };

  it('verifies a permit against the JWKS and returns its claims', async () => {
    const verifier = createPermitVerifier({
      jwksUrl,
      issuer,
      account: 'acc_northpeak0000000000001',
      environment: 'test',
    });
    const expected = claims();
    const got = await verifier.verify(signPermit(privateKey, kid, expected), {
      action: 'payments.refund',
      resource: 'order:100482',
      environment: 'test',
    });
    expect(got).toEqual(expected);
    expect(fetches).toBeGreaterThan(0);
  });

  it('refuses a permit for another resource, an expired one, and a tampered one, with the codes a service answers with', async () => {
    const verifier = createPermitVerifier({
      jwksUrl,
      issuer,
      account: 'acc_northpeak0000000000001',
      environment: 'test',
    });
    const token = signPermit(privateKey, kid, claims());
    const mismatch = verifier.verify(token, { action: 'payments.refund', resource: 'order:1' });
    await expect(mismatch).rejects.toBeInstanceOf(PermitMismatchError);
    await expect(mismatch).rejects.toMatchObject({ code: 'permit.mismatch', status: 403 });

    const expired = signPermit(privateKey, kid, claims({ iat: 1_700_000_000, exp: 1_700_000_300 }));
    await expect(verifier.verify(expired)).rejects.toBeInstanceOf(PermitExpiredError);

    const [header, payload, signature] = token.split('.') as [string, string, string];
    const forged = `${header}.${b64url({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), act: 'payments.payout' })}.${signature}`;
    const refused = verifier.verify(forged);
    await expect(refused).rejects.toBeInstanceOf(PermitSignatureInvalidError);
    await expect(refused).rejects.toBeInstanceOf(PermitError);
    await expect(refused).rejects.toMatchObject({ code: 'auth.signature_invalid', status: 401 });
  });
});

describe('agent-authz/webhooks', () => {
  const secret = 'whsec_4f1c9a0b2d7e6f3a8b5c0d1e2f3a4b5c';
  const rawBody = JSON.stringify({ id: 'evt_1', type: 'decision.created', data: { effect: 'allow' } });
  const hmac = `sha256=${createHmac('sha256', secret).update(rawBody).digest('hex')}`;

  it('signs as the service does and verifies the signature of the exact bytes', () => {
    expect(signWebhookBody(rawBody, secret)).toBe(hmac);
    expect(verifyWebhookSignature(rawBody, hmac, secret)).toBe(true);
    expect(verifyWebhookSignature(Buffer.from(rawBody), hmac.toUpperCase().replace('SHA256=', 'sha256='), secret)).toBe(
      true,
    );
  });

  it('rejects another body, another secret, and missing or malformed headers', () => {
    expect(verifyWebhookSignature(`${rawBody} `, hmac, secret)).toBe(false);
    expect(verifyWebhookSignature(rawBody, hmac, `${secret}x`)).toBe(false);
    expect(verifyWebhookSignature(rawBody, undefined, secret)).toBe(false);
    expect(verifyWebhookSignature(rawBody, hmac.slice(0, -2), secret)).toBe(false);
    expect(verifyWebhookSignature(rawBody, [hmac, hmac], secret)).toBe(false);
  });
});
