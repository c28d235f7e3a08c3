/**
 * `authz keys create|revoke|rotate` and `authz push` against a real service
 * listening on 127.0.0.1 (an ephemeral port), on both stores. The commands run
 * in-process (keysCommand/pushCommand with their output captured) and talk to the
 * service over HTTP; what they did is checked through the API: keys that answer
 * or are refused, the JWKS, the policies. Also POST /admin/api-keys/:id/rotate
 * directly: the new key and the old key's revocation happen in one transaction.
 */
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CliIo } from '../../../compiler/cli/io.js';
import { main } from '../../../compiler/cli/main.js';
import type { Bundle } from '../../../compiler/bundle/format.js';
import { compileItems, createBundle, readPolicyValue } from '../../../compiler/index.js';
import { keysCommand } from '../../../runtime/cli/keys.js';
import { pushCommand } from '../../../runtime/cli/push.js';
import type { CommandIo } from '../../../runtime/cli/http-client.js';
import { STORE_KINDS } from '../../helpers/postgres.js';
import { ADMIN_TOKEN, json, startRuntime, type TestRuntime } from '../helpers/app.js';
import type { JsonObject } from '../../helpers/json.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const UNKNOWN_KEY = `svc_test_sk_${'Q'.repeat(40)}`;

interface Run {
  code: number;
  out: string;
  err: string;
}

async function run(
  command: (argv: readonly string[], io?: CommandIo) => Promise<number>,
  argv: string[],
): Promise<Run> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await command(argv, { out: (t) => out.push(t), err: (t) => err.push(t) });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

/** Runs with one environment variable unset (the commands fall back to it). */
async function withoutEnv<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const saved = process.env[name];
  delete process.env[name];
  try {
    return await fn();
  } finally {
    if (saved !== undefined) process.env[name] = saved;
  }
}

/** A port nothing listens on (taken, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe.each(STORE_KINDS)('authz keys and authz push (%s store)', (kind) => {
  let rt: TestRuntime;
  let url: string;
  let dir: string;
  let bundleFile: string;
  let bundle: Bundle;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'authz-cli-'));
    bundleFile = join(dir, 'examples.json');
    const log: string[] = [];
    const io: CliIo = { out: (t) => log.push(t), err: (t) => log.push(t), isTTY: false, cwd: ROOT };
    const code = main(['compile', join(ROOT, 'examples'), '-o', bundleFile], io);
    if (code !== 0) throw new Error(`authz compile failed (${code}):\n${log.join('\n')}`);
    bundle = JSON.parse(readFileSync(bundleFile, 'utf8')) as Bundle;
    rt = await startRuntime(kind);
    await rt.app.listen({ host: '127.0.0.1', port: 0 });
    url = `http://127.0.0.1:${(rt.app.server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await rt?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const keys = (...argv: string[]) => run(keysCommand, [...argv, '--url', url, '--admin-token', ADMIN_TOKEN]);
  const push = (...argv: string[]) => run(pushCommand, [...argv, '--url', url]);

  /** A request over HTTP with the key as bearer token. */
  async function api(
    key: string,
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: JsonObject }> {
    const r = await fetch(`${url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: r.status, body: (await r.json()) as JsonObject };
  }
  const decide = (key: string) => api(key, 'POST', '/v1/decisions', { agent_id: 'cli-bot', action: 'cli.check' });
  const expectRefused = async (key: string) => {
    const r = await decide(key);
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('auth.invalid_key');
  };

  /** `authz keys create` in text form: the printed id and key. */
  function printedKey(r: Run): { id: string; key: string } {
    expect(r.code, r.err).toBe(0);
    const id = /^ {2}id: +(key_\S+)$/m.exec(r.out)?.[1];
    const key = /^ {2}key: +(svc_(?:test|live)_sk_\S+)$/m.exec(r.out)?.[1];
    expect(id, r.out).toBeDefined();
    expect(key, r.out).toBeDefined();
    return { id: id!, key: key! };
  }

  describe('keys create', () => {
    it('prints a working key, shown once, with its record (defaults: test, every scope)', async () => {
      const r = await keys('create', '--account', rt.accountId);
      const { id, key } = printedKey(r);
      expect(key).toMatch(/^svc_test_sk_[0-9A-Za-z]{32,}$/);
      expect(r.out).toContain(`account:     ${rt.accountId}`);
      expect(r.out).toContain('environment: test');
      expect(r.out).toContain('scopes:      *');
      expect(r.out).toMatch(/shown only this once/);
      expect(id).toMatch(/^key_/);
      const d = await decide(key);
      expect(d.status).toBe(200);
      expect(d.body.object).toBe('decision');
    });

    it('--environment live --scopes: a live key with only those scopes', async () => {
      const r = await keys(
        'create',
        '--account',
        rt.accountId,
        '--environment',
        'live',
        '--scopes',
        'decisions:write, decisions:read',
      );
      const { key } = printedKey(r);
      expect(key).toMatch(/^svc_live_sk_/);
      expect(r.out).toContain('scopes:      decisions:write,decisions:read');
      expect((await decide(key)).status).toBe(200);
      const policies = await api(key, 'GET', '/v1/policies');
      expect(policies.status).toBe(403);
      expect(policies.body.error.code).toBe('auth.scope_insufficient');
    });

    it('--format json prints the answer body', async () => {
      const r = await keys('create', '--account', rt.accountId, '--format', 'json');
      expect(r.code, r.err).toBe(0);
      const body = JSON.parse(r.out) as JsonObject;
      expect(body).toMatchObject({ object: 'api_key', account_id: rt.accountId, environment: 'test', scopes: ['*'] });
      expect(body.id).toMatch(/^key_/);
      expect((await decide(body.key)).status).toBe(200);
    });

    it('--account-name creates the account first, then its key', async () => {
      const r = await keys('create', '--account-name', 'cli-made');
      const { key } = printedKey(r);
      const accountId = /^created account (acc_\S+) \(cli-made\)$/m.exec(r.out)?.[1];
      expect(accountId, r.out).toBeDefined();
      expect(accountId).not.toBe(rt.accountId);
      // --format json: the new account said on stderr, the key's record alone on stdout.
      const asJson = await keys('create', '--account-name', 'cli-made-json', '--format', 'json');
      expect(asJson.code, asJson.err).toBe(0);
      const made = /^created account (acc_\S+) \(cli-made-json\)$/.exec(asJson.err)?.[1];
      expect(made, asJson.err).toBeDefined();
      expect(JSON.parse(asJson.out)).toMatchObject({ object: 'api_key', account_id: made });
      expect(r.out).toContain(`account:     ${accountId}`);
      // A key of the new, empty account: none of the main account's policies.
      await rt.setPolicies([{ id: 'pol_main_only', effect: 'allow', actions: ['cli.check'] }]);
      const mine = await api(key, 'GET', '/v1/policies');
      expect(mine.status).toBe(200);
      expect(mine.body.data).toEqual([]);
    });

    it('--account-name of one existing account: reuses it and says so', async () => {
      const first = await keys('create', '--account-name', 'cli-reused');
      const accountId = /^created account (acc_\S+) \(cli-reused\)$/m.exec(first.out)?.[1];
      expect(accountId, first.out).toBeDefined();
      const again = await keys('create', '--account-name', 'cli-reused');
      const { key } = printedKey(again);
      expect(again.out).toMatch(new RegExp(`^using the existing account ${accountId} \\(cli-reused\\)$`, 'm'));
      expect(again.out).not.toMatch(/created account/);
      expect(again.out).toContain(`account:     ${accountId}`);
      // --format json (as docs/reviews.md pipes it to jq): the record alone on stdout, the reuse said on stderr.
      const asJson = await keys('create', '--account-name', 'cli-reused', '--format', 'json');
      expect(asJson.code, asJson.err).toBe(0);
      expect(JSON.parse(asJson.out)).toMatchObject({ object: 'api_key', account_id: accountId });
      expect(asJson.err).toBe(`using the existing account ${accountId} (cli-reused)`);
      const [{ n }] = await rt.store.sql<
        Array<{ n: number }>
      >`select count(*)::int as n from accounts where name = 'cli-reused'`;
      expect(n).toBe(1);
      expect((await api(key, 'GET', '/v1/policies')).status).toBe(200);
    });

    it('--account-name of two or more accounts: exit 1 naming their ids, no key made', async () => {
      const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
      const ids: string[] = [];
      for (let i = 0; i < 2; i++) {
        const r = await rt.app.inject({
          method: 'POST',
          url: '/admin/accounts',
          headers: admin,
          payload: { name: 'cli-twin' },
        });
        expect(r.statusCode).toBe(201);
        ids.push(json(r).id);
      }
      const keysBefore = await rt.store.sql<Array<{ n: number }>>`select count(*)::int as n from api_keys`;
      const r = await keys('create', '--account-name', 'cli-twin');
      expect(r.code).toBe(1);
      expect(r.out).toBe('');
      expect(r.err).toMatch(
        /^authz keys create: 2 accounts are named "cli-twin": acc_\w+, acc_\w+; give the one to use with --account acc_\.\.\.$/,
      );
      for (const id of ids) expect(r.err).toContain(id);
      expect(await rt.store.sql<Array<{ n: number }>>`select count(*)::int as n from api_keys`).toEqual(keysBefore);
      // GET /admin/accounts?name= lists them (oldest first; these two were made at the same instant of the test clock).
      const listed = await rt.app.inject({ method: 'GET', url: '/admin/accounts?name=cli-twin', headers: admin });
      expect(json(listed)).toMatchObject({ object: 'list', has_more: false });
      expect(
        json(listed)
          .data.map((a: { id: string }) => a.id)
          .sort(),
      ).toEqual([...ids].sort());
      expect((await rt.app.inject({ method: 'GET', url: '/admin/accounts', headers: admin })).statusCode).toBe(400);
    });

    it('--help, for keys and each subcommand: the usage, exit 0', async () => {
      for (const argv of [['--help'], ['help'], ['create', '--help'], ['revoke', '-h'], ['rotate', '--help']]) {
        const r = await run(keysCommand, argv);
        expect(r.code, argv.join(' ')).toBe(0);
        expect(r.out).toMatch(/^usage:\n {2}authz keys create /);
        expect(r.out).toContain('--account-name NAME: the one account of that name');
      }
    });

    it('an unknown account: exit 1 with 404 account.not_found', async () => {
      const r = await keys('create', '--account', 'acc_doesnotexist');
      expect(r.code).toBe(1);
      expect(r.out).toBe('');
      expect(r.err).toMatch(/^authz keys create: 404 account\.not_found: /);
    });

    it('a scope the service does not know: exit 1 with the code and each detail', async () => {
      const r = await keys('create', '--account', rt.accountId, '--scopes', 'decisions:write,orders:fly');
      expect(r.code).toBe(1);
      expect(r.err).toMatch(/400 validation\.invalid_field: /);
      expect(r.err).toMatch(/^ {2}\/scopes\/1: /m);
    });

    it('usage errors exit 2 without calling the service', async () => {
      expect((await keys('create')).code).toBe(2);
      expect((await keys('create', '--account', rt.accountId, '--account-name', 'x')).code).toBe(2);
      expect((await keys('create', '--account', rt.accountId, '--environment', 'prod')).code).toBe(2);
      expect((await keys('create', '--account', rt.accountId, '--scopes', ',')).code).toBe(2);
      expect((await keys('create', '--account', rt.accountId, '--format', 'yaml')).code).toBe(2);
      expect((await keys('create', '--account', rt.accountId, '--bogus')).code).toBe(2);
      expect((await keys('revoke')).code).toBe(2);
      expect((await keys('revoke', rt.testKey)).err).toMatch(/not its id/);
      expect((await keys('rotate', 'key_a', 'key_b')).code).toBe(2);
      const unknown = await keys('frobnicate');
      expect(unknown.code).toBe(2);
      expect(unknown.err).toBe(
        'authz keys: unknown subcommand "frobnicate"\nrun `authz keys --help` for its options and examples',
      );
      const noToken = await withoutEnv('AUTHZ_ADMIN_TOKEN', () =>
        run(keysCommand, ['create', '--account', rt.accountId, '--url', url]),
      );
      expect(noToken.code).toBe(2);
      expect(noToken.err).toMatch(/AUTHZ_ADMIN_TOKEN/);
    });

    it('a wrong operator token: exit 1 with 401 auth.invalid_admin_token', async () => {
      const r = await run(keysCommand, [
        'create',
        '--account',
        rt.accountId,
        '--url',
        url,
        '--admin-token',
        'not-the-token',
      ]);
      expect(r.code).toBe(1);
      expect(r.err).toMatch(/401 auth\.invalid_admin_token/);
    });

    it('an unreachable service: exit 1 saying so', async () => {
      const port = await closedPort();
      const r = await run(keysCommand, [
        'create',
        '--account',
        rt.accountId,
        '--url',
        `http://127.0.0.1:${port}`,
        '--admin-token',
        ADMIN_TOKEN,
      ]);
      expect(r.code).toBe(1);
      expect(r.err).toContain(`cannot reach http://127.0.0.1:${port}`);
    });
  });

  describe('keys revoke', () => {
    it('makes the key answer 401 auth.invalid_key at once', async () => {
      const { id, key } = printedKey(await keys('create', '--account', rt.accountId));
      expect((await decide(key)).status).toBe(200); // now in the key cache
      const r = await keys('revoke', id);
      expect(r.code, r.err).toBe(0);
      expect(r.out).toBe(`revoked: ${id}; it is refused from now on`);
      await expectRefused(key);
    });

    it('an unknown id: exit 1 with 404 api_key.not_found', async () => {
      const r = await keys('revoke', 'key_doesnotexist');
      expect(r.code).toBe(1);
      expect(r.err).toMatch(/404 api_key\.not_found/);
    });
  });

  describe('keys rotate KEY_ID', () => {
    it('gives a new working key like the old one; the old one is refused at once', async () => {
      const old = JSON.parse(
        (
          await keys(
            'create',
            '--account',
            rt.accountId,
            '--environment',
            'live',
            '--scopes',
            'decisions:write,policies:read',
            '--format',
            'json',
          )
        ).out,
      );
      expect((await decide(old.key)).status).toBe(200); // cached as valid
      const r = await keys('rotate', old.id);
      const { id, key } = printedKey(r);
      expect(r.out).toContain(`rotated: ${old.id} is revoked; its replacement:`);
      expect(id).not.toBe(old.id);
      expect(key).toMatch(/^svc_live_sk_/);
      expect(r.out).toContain('scopes:      decisions:write,policies:read');
      expect(r.out).toContain(`account:     ${rt.accountId}`);
      await expectRefused(old.key);
      expect((await decide(key)).status).toBe(200);
      expect((await api(key, 'GET', '/v1/policies')).status).toBe(200);
      expect((await api(key, 'GET', '/v1/agents')).status).toBe(403);
    });

    it('--format json prints the new record with "replaces"', async () => {
      const old = JSON.parse((await keys('create', '--account', rt.accountId, '--format', 'json')).out);
      const r = await keys('rotate', old.id, '--format', 'json');
      expect(r.code, r.err).toBe(0);
      const body = JSON.parse(r.out);
      expect(body).toMatchObject({
        object: 'api_key',
        account_id: rt.accountId,
        environment: 'test',
        scopes: ['*'],
        replaces: old.id,
      });
      expect((await decide(body.key)).status).toBe(200);
      await expectRefused(old.key);
    });

    it('a revoked or unknown id: exit 1 with 404 api_key.not_found, and no new key', async () => {
      const { id } = printedKey(await keys('create', '--account', rt.accountId));
      expect((await keys('revoke', id)).code).toBe(0);
      const [{ n: before }] = await rt.store.sql<Array<{ n: number }>>`select count(*)::int as n from api_keys`;
      for (const gone of [id, 'key_doesnotexist']) {
        const r = await keys('rotate', gone);
        expect(r.code).toBe(1);
        expect(r.out).toBe('');
        expect(r.err).toMatch(/^authz keys rotate: 404 api_key\.not_found: /);
      }
      const [{ n: after }] = await rt.store.sql<Array<{ n: number }>>`select count(*)::int as n from api_keys`;
      expect(after).toBe(before);
    });

    it('a rotated key cannot be rotated again (it is revoked)', async () => {
      const { id } = printedKey(await keys('create', '--account', rt.accountId));
      expect((await keys('rotate', id)).code).toBe(0);
      const again = await keys('rotate', id);
      expect(again.code).toBe(1);
      expect(again.err).toMatch(/404 api_key\.not_found/);
    });
  });

  describe('keys rotate (signing key)', () => {
    it('without an id rotates the permit signing key: the new kid is published in the JWKS', async () => {
      const before = (await (await fetch(`${url}/.well-known/jwks.json`)).json()) as { keys: Array<{ kid: string }> };
      const r = await keys('rotate');
      expect(r.code, r.err).toBe(0);
      const kid = /^rotated: new signing key (\S+); the previous key stays in the JWKS until its tokens expire$/.exec(
        r.out,
      )?.[1];
      expect(kid, r.out).toBeDefined();
      expect(before.keys.map((k) => k.kid)).not.toContain(kid);
      const after = (await (await fetch(`${url}/.well-known/jwks.json`)).json()) as { keys: Array<{ kid: string }> };
      expect(after.keys.map((k) => k.kid)).toContain(kid);
      // The previous keys stay published.
      for (const k of before.keys) expect(after.keys.map((x) => x.kid)).toContain(k.kid);
    });
  });

  describe('push', () => {
    /** `authz push` with a stand-in for the terminal's question: it answers `answer` and records what it was asked. */
    const pushAsking = async (answer: boolean, ...argv: string[]) => {
      const asked: string[] = [];
      const out: string[] = [];
      const err: string[] = [];
      const confirm = async (question: string) => {
        asked.push(question);
        return answer;
      };
      const code = await pushCommand(
        [...argv, '--url', url],
        { out: (t) => out.push(t), err: (t) => err.push(t) },
        confirm,
      );
      return { code, out: out.join('\n'), err: err.join('\n'), asked };
    };
    const activeIds = async () =>
      ((await api(rt.testKey, 'GET', '/v1/policies?limit=100')).body.data as Array<{ id: string }>)
        .map((p) => p.id)
        .sort();

    it('a push that would remove policies, without a terminal and without --yes: exit 1, lists them, changes nothing', async () => {
      await rt.setPolicies([{ id: 'pol_main_only', effect: 'allow', actions: ['cli.check'] }]);
      const before = await activeIds();
      const r = await push(bundleFile, '--key', rt.testKey);
      expect(r.code).toBe(1);
      expect(r.out).toMatch(
        new RegExp(
          `^policies: ${bundle.policies.length} added, 1 removed, 0 changed \\(.*examples\\.json -> ${url}\\)$`,
          'm',
        ),
      );
      expect(r.out).toMatch(/^ {2}- pol_main_only \(allow, priority 100, actions \[cli\.check\]\)$/m);
      expect(r.out).toMatch(/^ {2}\+ pol_support_refund_small_chat \(/m);
      expect(r.err).toMatch(/would remove 1 policy .*nothing was pushed.*--yes/);
      expect(await activeIds()).toEqual(before);
    });

    it('asks on a terminal before removing: no keeps everything, yes pushes', async () => {
      const before = await activeIds();
      const no = await pushAsking(false, bundleFile, '--key', rt.testKey);
      expect(no.code).toBe(1);
      expect(no.asked).toEqual(['Remove 1 policy from the service (listed with -)? [y/N] ']);
      expect(no.err).toMatch(/nothing was pushed/);
      expect(await activeIds()).toEqual(before);
      const yes = await pushAsking(true, bundleFile, '--key', rt.testKey);
      expect(yes.code, yes.err).toBe(0);
      expect(yes.out).toMatch(/^ {2}- pol_main_only /m);
      expect(await activeIds()).toEqual(bundle.policies.map((p) => p.id).sort());
    });

    it('shows what changes field by field, and asks nothing when nothing is removed', async () => {
      const changed = join(dir, 'changed.json');
      const policies = bundle.policies.map((p) =>
        p.id === 'pol_support_refund_small_chat' ? { ...p, priority: 7 } : p,
      );
      const compiled = compileItems(policies.map((policy) => readPolicyValue(policy).items[0]!));
      writeFileSync(changed, JSON.stringify(createBundle(compiled.table!)));
      const r = await pushAsking(false, changed, '--key', rt.testKey);
      expect(r.code, r.err).toBe(0);
      expect(r.asked).toEqual([]);
      expect(r.out).toMatch(/^policies: 0 added, 0 removed, 1 changed /m);
      expect(r.out).toContain('  ~ pol_support_refund_small_chat\n      priority: 100 -> 7');
    });

    it("shows the bundle's lints (a conflict at the same priority) before pushing it", async () => {
      const conflicting = join(dir, 'conflicting.json');
      const policies = [
        ...bundle.policies,
        {
          id: 'pol_cli_conflict',
          name: 'cli-conflict',
          state: 'enabled',
          priority: 100,
          effect: 'deny',
          actions: ['orders.read'],
        },
      ];
      const compiled = compileItems(policies.map((policy) => readPolicyValue(policy).items[0]!));
      const lints = compiled.diagnostics.filter((d) => d.code === 'lint.conflict');
      expect(lints.length).toBeGreaterThan(0);
      writeFileSync(conflicting, JSON.stringify(createBundle(compiled.table!)));
      const r = await pushAsking(false, conflicting, '--key', rt.testKey);
      expect(r.code, r.err).toBe(0);
      for (const d of lints) expect(r.out).toContain(`warning: lint.conflict: ${d.message}`);
      expect(r.out).toMatch(/^ {2}\+ pol_cli_conflict /m);
      // Back to the examples.
      const back = await pushAsking(true, bundleFile, '--key', rt.testKey);
      expect(back.code, back.err).toBe(0);
      expect(back.out).not.toMatch(/^warning:/m);
    });

    it('sends a bundle compiled from the examples: its policies are active (--yes: removals without asking)', async () => {
      await rt.setPolicies([{ id: 'pol_main_only', effect: 'allow', actions: ['cli.check'] }]);
      const r = await pushAsking(false, bundleFile, '--key', rt.testKey, '--yes');
      expect(r.code, r.err).toBe(0);
      expect(r.asked).toEqual([]);
      expect(r.out.split('\n').at(-1)).toBe(`pushed: ${bundle.policies.length} policies, hash ${bundle.hash}`);
      const listed = await api(rt.testKey, 'GET', '/v1/policies?limit=100');
      expect(listed.status).toBe(200);
      expect(listed.body.data.map((p: { id: string }) => p.id).sort()).toEqual(bundle.policies.map((p) => p.id).sort());
      const active = await api(rt.testKey, 'GET', '/v1/bundle');
      expect(active.body).toMatchObject({ hash: bundle.hash, policies: bundle.policies.length });
    });

    it('takes the key from AUTHZ_API_KEY', async () => {
      const saved = process.env.AUTHZ_API_KEY;
      process.env.AUTHZ_API_KEY = rt.liveKey;
      try {
        const r = await push(bundleFile);
        expect(r.code, r.err).toBe(0);
      } finally {
        if (saved === undefined) delete process.env.AUTHZ_API_KEY;
        else process.env.AUTHZ_API_KEY = saved;
      }
      // The live key's environment got it.
      expect((await api(rt.liveKey, 'GET', '/v1/bundle')).body).toMatchObject({ hash: bundle.hash });
    });

    it('an invalid bundle: exit 1 with status, code, message and each detail; nothing changes', async () => {
      const newer = join(dir, 'newer.json');
      writeFileSync(newer, JSON.stringify({ ...bundle, format_version: 2 }));
      const r = await push(newer, '--key', rt.testKey);
      expect(r.code).toBe(1);
      // The service says what is wrong with it (no preview of a bundle that does not load).
      expect(r.out).toBe('');
      expect(r.err).toMatch(/^authz push: 400 validation\.invalid_bundle: invalid bundle: .*newer/);
      expect(r.err).toMatch(/^ {2}\/format_version: /m);
      expect((await api(rt.testKey, 'GET', '/v1/bundle')).body).toMatchObject({ hash: bundle.hash });
    });

    it('a file that is not JSON: exit 1 with validation.invalid_json', async () => {
      const yaml = join(dir, 'policies.yaml');
      writeFileSync(yaml, 'policies:\n  - id: pol_x\n');
      const r = await push(yaml, '--key', rt.testKey);
      expect(r.code).toBe(1);
      expect(r.err).toMatch(/400 validation\.invalid_json/);
    });

    it('a wrong key: exit 1 with 401 auth.invalid_key and only that (no policies:read hint), with or without --yes', async () => {
      for (const yes of [[], ['--yes']]) {
        const r = await push(bundleFile, '--key', UNKNOWN_KEY, ...yes);
        expect(r.code).toBe(1);
        const lines = r.err.split('\n');
        expect(lines[0]).toMatch(/^authz push: 401 auth\.invalid_key: /);
        expect(lines.slice(1)).toEqual([
          `authz push: nothing was pushed: ${url} refused the key (from --key, else AUTHZ_API_KEY); check it is a key of that service, not revoked`,
        ]);
        expect(r.out).toBe('');
      }
    });

    it('a service that cannot be reached: exit 1 naming the URL tried and where it came from, nothing about scopes', async () => {
      const port = await closedPort();
      for (const yes of [[], ['--yes']]) {
        const r = await run(pushCommand, [
          bundleFile,
          '--key',
          rt.testKey,
          '--url',
          `http://127.0.0.1:${port}`,
          ...yes,
        ]);
        expect(r.code).toBe(1);
        const lines = r.err.split('\n');
        expect(lines[0]).toMatch(new RegExp(`^authz push: cannot reach http://127\\.0\\.0\\.1:${port}: `));
        expect(lines.slice(1)).toEqual([
          `authz push: nothing was pushed: no service answered at http://127.0.0.1:${port} (from --url, else AUTHZ_URL, else http://127.0.0.1:8080); is it running there?`,
        ]);
        expect(r.err).not.toContain('policies:read');
      }
    });

    it('a key without policies:write: exit 1 with 403 auth.scope_insufficient', async () => {
      const r = await push(bundleFile, '--key', await rt.keyWith(['policies:read']));
      expect(r.code).toBe(1);
      expect(r.err).toMatch(/403 auth\.scope_insufficient/);
    });

    it('a key without policies:read: exit 1 (it cannot show the changes), nothing pushed; with --yes it pushes', async () => {
      const before = (await api(rt.testKey, 'GET', '/v1/bundle')).body.hash;
      const one = join(dir, 'one.json');
      const compiled = compileItems([
        readPolicyValue({ id: 'pol_only_one', effect: 'allow', actions: ['one.read'] }).items[0]!,
      ]);
      const oneBundle = createBundle(compiled.table!);
      writeFileSync(one, JSON.stringify(oneBundle));
      const writeOnly = await rt.keyWith(['policies:write']);
      const r = await push(one, '--key', writeOnly);
      expect(r.code).toBe(1);
      expect(r.err).toMatch(/403 auth\.scope_insufficient/);
      expect(r.err).toMatch(/needs policies:read .*nothing was pushed/);
      expect((await api(rt.testKey, 'GET', '/v1/bundle')).body.hash).toBe(before);
      const forced = await push(one, '--key', writeOnly, '--yes');
      expect(forced.code, forced.err).toBe(0);
      expect((await api(rt.testKey, 'GET', '/v1/bundle')).body.hash).toBe(oneBundle.hash);
      // Back to the examples for the tests after this one.
      expect((await push(bundleFile, '--key', rt.testKey, '--yes')).code).toBe(0);
    });

    it('--help prints the usage, exit 0', async () => {
      const r = await push('--help');
      expect(r.code).toBe(0);
      expect(r.out).toMatch(/^usage: authz push FILE .*--yes/);
    });

    it('a missing file, no key or no FILE: exit 2 (usage)', async () => {
      const missing = await push(join(dir, 'nope.json'), '--key', rt.testKey);
      expect(missing.code).toBe(2);
      expect(missing.err).toMatch(/cannot read .*nope\.json/);
      const noKey = await withoutEnv('AUTHZ_API_KEY', () => push(bundleFile));
      expect(noKey.code).toBe(2);
      expect(noKey.err).toBe(
        'authz push: give --key or set AUTHZ_API_KEY\nrun `authz push --help` for its options and examples',
      );
      expect((await push('--key', rt.testKey)).code).toBe(2);
      expect((await push(bundleFile, bundleFile, '--key', rt.testKey)).code).toBe(2);
    });
  });

  describe('POST /admin/api-keys/:id/rotate', () => {
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const rotate = (id: string, headers: Record<string, string> = admin) =>
      rt.app.inject({ method: 'POST', url: `/admin/api-keys/${id}/rotate`, headers });
    const newKey = async (environment: 'test' | 'live', scopes: string[]) => {
      const r = await rt.app.inject({
        method: 'POST',
        url: `/admin/accounts/${rt.accountId}/api-keys`,
        headers: admin,
        payload: { environment, scopes },
      });
      expect(r.statusCode).toBe(201);
      return json(r);
    };
    const row = async (id: string) => {
      const [r] = await rt.store.sql<
        Array<{ revoked_at: Date | null; environment: string; scopes: string[]; account_id: string }>
      >`
        select revoked_at, environment, scopes, account_id from api_keys where id = ${id}`;
      return r!;
    };

    it('201 with the new key record and "replaces"; old revoked, new live, same account, environment and scopes', async () => {
      const old = await newKey('live', ['decisions:write', 'budgets:read']);
      const r = await rotate(old.id);
      expect(r.statusCode, r.body).toBe(201);
      const body = json(r);
      expect(Object.keys(body)).toEqual([
        'id',
        'object',
        'key',
        'account_id',
        'environment',
        'scopes',
        'created_at',
        'replaces',
      ]);
      expect(body).toMatchObject({
        object: 'api_key',
        account_id: rt.accountId,
        environment: 'live',
        scopes: ['decisions:write', 'budgets:read'],
        replaces: old.id,
      });
      expect(body.id).not.toBe(old.id);
      expect(body.key).toMatch(/^svc_live_sk_/);
      expect((await row(old.id)).revoked_at).toBeInstanceOf(Date);
      expect(await row(body.id)).toMatchObject({
        revoked_at: null,
        environment: 'live',
        scopes: ['decisions:write', 'budgets:read'],
        account_id: rt.accountId,
      });
      expect((await rt.call(old.key, { method: 'GET', url: '/v1/budgets' })).statusCode).toBe(401);
      expect((await rt.call(body.key, { method: 'GET', url: '/v1/budgets' })).statusCode).toBe(200);
    });

    it('404 api_key.not_found for an unknown or revoked key; 401 without the operator token', async () => {
      const unknown = await rotate('key_doesnotexist');
      expect(unknown.statusCode).toBe(404);
      expect(json(unknown).error.code).toBe('api_key.not_found');
      const old = await newKey('test', ['*']);
      expect(
        (await rt.app.inject({ method: 'DELETE', url: `/admin/api-keys/${old.id}`, headers: admin })).statusCode,
      ).toBe(200);
      const revoked = await rotate(old.id);
      expect(revoked.statusCode).toBe(404);
      expect(json(revoked).error.code).toBe('api_key.not_found');
      const live = await newKey('test', ['*']);
      const noToken = await rotate(live.id, {});
      expect(noToken.statusCode).toBe(401);
      expect(json(noToken).error.code).toBe('auth.invalid_admin_token');
      expect((await row(live.id)).revoked_at).toBeNull();
    });

    it('two rotations of one key at once: one new key, the other 404', async () => {
      const old = await newKey('test', ['events:read']);
      const answers = await Promise.all([rotate(old.id), rotate(old.id)]);
      expect(answers.map((a) => a.statusCode).sort()).toEqual([201, 404]);
      const [{ n }] = await rt.store.sql<Array<{ n: number }>>`
        select count(*)::int as n from api_keys where account_id = ${rt.accountId} and scopes = array['events:read']::text[] and revoked_at is null`;
      expect(n).toBe(1);
    });

    it('one transaction: when the new key cannot be stored, the old key is not revoked', async () => {
      const old = await newKey('test', ['agents:read']);
      // A real failure inside the transaction, after the revocation: the store
      // refuses the new key's insert (a trigger for this test's scopes only).
      await rt.store.sql.unsafe(`
        create function refuse_cli_test_key() returns trigger language plpgsql as $$
        begin
          if new.scopes = array['agents:read'] then raise exception 'refused by test trigger'; end if;
          return new;
        end $$`);
      await rt.store.sql.unsafe(
        'create trigger refuse_cli_test_key before insert on api_keys for each row execute function refuse_cli_test_key()',
      );
      try {
        const r = await rotate(old.id);
        expect(r.statusCode).toBe(500);
        expect(json(r).error.code).toBe('internal.error');
      } finally {
        await rt.store.sql.unsafe('drop trigger refuse_cli_test_key on api_keys');
        await rt.store.sql.unsafe('drop function refuse_cli_test_key()');
      }
      expect((await row(old.id)).revoked_at).toBeNull();
      expect((await rt.call(old.key, { method: 'GET', url: '/v1/agents' })).statusCode).toBe(200);
      // And with the store accepting it again, the rotation goes through.
      const r = await rotate(old.id);
      expect(r.statusCode).toBe(201);
      expect((await row(old.id)).revoked_at).toBeInstanceOf(Date);
    });
  });
});
