/**
 * The Python client (clients/python/agent_authz) against a real server, on both
 * stores: the service listens on 127.0.0.1, the policies its tests use are
 * installed, and `python3 -m unittest discover -s clients/python/tests` runs with
 * the URL and keys in its environment; it must exit 0 (its output is shown when
 * it does not). The webhook dispatcher runs, so a Python test receives a real
 * delivery. Signature vectors are computed here, by the service's own signer and
 * node:crypto, for the Python helpers to verify.
 *
 * AUTHZ_TEST_PYTHON picks another interpreter (e.g. a Python 3.9 to check the
 * package's oldest supported version).
 */
import { spawn } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signWebhookBody } from '../../webhook-receiver/index.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { START, startRuntime, type TestRuntime } from '../runtime/helpers/app.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PYTHON = process.env.AUTHZ_TEST_PYTHON ?? 'python3';

/** The policies clients/python/tests/support.py names (ALLOW, DENY, REVIEW, CHARGE, LIMITED, LLM, FILES_READ, SEND). */
const POLICIES = [
  { id: 'pol_read', effect: 'allow', actions: ['orders.read'] },
  { id: 'pol_delete', effect: 'deny', actions: ['orders.delete'] },
  { id: 'pol_refund', effect: 'review', actions: ['payments.refund'] },
  {
    id: 'pol_charge',
    effect: 'allow',
    actions: ['payments.charge'],
    budget: { unit: 'USD', limit: 100, period: 'monthly' },
  },
  { id: 'pol_export', effect: 'allow', actions: ['reports.export'], rate_limit: { per_minute: 1 } },
  {
    id: 'pol_llm_usd',
    effect: 'allow',
    actions: ['llm.call'],
    budget: { unit: 'USD', limit: 1, period: 'daily', scope: 'session' },
  },
  {
    id: 'pol_llm_tokens',
    effect: 'allow',
    actions: ['llm.call'],
    budget: { unit: 'tokens', limit: 10_000, period: 'daily', scope: 'session' },
  },
  { id: 'pol_files_read', effect: 'allow', actions: ['files.read'], labels: ['private'] },
  { id: 'pol_send', effect: 'allow', actions: ['email.send'] },
  {
    id: 'pol_send_untrusted',
    effect: 'deny',
    priority: 10,
    actions: ['email.send'],
    condition: "contains(session.labels, 'untrusted')",
  },
] as const;

/** Signatures made independently of the Python code: the service's signer, and the Standard Webhooks scheme with node:crypto. */
function webhookVectors() {
  const body = Buffer.from(
    JSON.stringify({ id: 'evt_vector', type: 'decision.deny', data: { note: 'café ✓ "quoted"\n' } }),
  );
  const serviceSecret = `whsec_${randomBytes(24).toString('base64url')}`;
  const key = randomBytes(24);
  const id = `evt_${randomBytes(8).toString('hex')}`;
  const timestamp = Math.floor(START / 1000);
  const standard = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64');
  return {
    service: {
      secret: serviceSecret,
      body_base64: body.toString('base64'),
      signature: signWebhookBody(body, serviceSecret),
    },
    standard: {
      secret: `whsec_${key.toString('base64')}`,
      id,
      timestamp,
      body_base64: body.toString('base64'),
      signature: `v1,${standard}`,
    },
  };
}

function runPython(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, ['-m', 'unittest', 'discover', '-s', 'clients/python/tests', '-v'], {
      cwd: ROOT,
      env: {
        ...process.env,
        ...env,
        PYTHONPATH: `${ROOT}clients/python`,
        PYTHONDONTWRITEBYTECODE: '1',
        PYTHONUNBUFFERED: '1',
        NO_PROXY: '127.0.0.1,localhost',
        no_proxy: '127.0.0.1,localhost',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

describe.each(STORE_KINDS)('Python client (%s)', (kind) => {
  let rt: TestRuntime;
  let url: string;
  beforeAll(async () => {
    rt = await startRuntime(kind);
    // Mutable copies of the constant policies (their lists are readonly).
    await rt.setPolicies(structuredClone(POLICIES) as unknown as Parameters<TestRuntime['setPolicies']>[0]);
    rt.services.dispatcher.start();
    url = await rt.app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(() => rt?.close());

  it('python3 -m unittest discover -s clients/python/tests passes', async () => {
    const { code, output } = await runPython({
      AUTHZ_TEST_URL: url,
      AUTHZ_TEST_KEY: rt.testKey,
      AUTHZ_TEST_OTHER_KEY: rt.otherKey,
      AUTHZ_TEST_WRITE_ONLY_KEY: await rt.keyWith(['decisions:write']),
      AUTHZ_TEST_WEBHOOK_VECTORS: JSON.stringify(webhookVectors()),
    });
    expect(code, output).toBe(0);
    // Every test ran and none was skipped (unittest prints "OK" or "OK (skipped=n)").
    expect(output, output).toMatch(/^Ran [1-9]\d* tests? in /m);
    expect(output, output).toMatch(/^OK$/m);
  }, 180_000);
});
