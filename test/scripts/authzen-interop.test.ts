/**
 * scripts/authzen-interop.mjs (docs/api.md#the-todo-scenario) against a real
 * `authz serve` on a fresh embedded store, which loads examples/authzen-todo
 * (the scenarios' rules written on agent attributes) into the test
 * environment, as a new user runs it:
 *
 * - our own decision files in the working group's format (single evaluations
 *   and batches of the Todo scenario, the gateway's route checks), with our
 *   own users stored from a JSON file and from a scenario page in Markdown:
 *   every decision as the rules say, exit 0; a wrong expectation is a FAIL
 *   line, its tally and exit 1; --help, usage errors and an unreachable
 *   service exit 0 / 2;
 * - then, where the openid/authzen mirror is on this machine
 *   (/work/.mirror/openid+authzen/repo, or AUTHZEN_REPO), the working group's
 *   own files read from it at test time: the Todo 1.0-02 file 40/40 and 3/3,
 *   the gateway file 25/25, the users' attributes read from the scenario page.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, startFreshServe, type FreshServe } from '../helpers/server-process.js';

const run = promisify(execFile);
const SCRIPT = join(ROOT, 'scripts', 'authzen-interop.mjs');
const MIRROR = process.env.AUTHZEN_REPO ?? '/work/.mirror/openid+authzen/repo';

/** Our own users (ids as a PEP takes them from a token), not the working group's. */
const USERS = {
  dXNlci1hbm5h: { email: 'anna@example.test', roles: ['admin', 'evil_genius'] },
  dXNlci1iZW4: { email: 'ben@example.test', roles: ['editor'] },
  dXNlci1jYXJs: { email: 'carl@example.test', roles: ['viewer'] },
};
const [ANNA, BEN, CARL] = Object.keys(USERS) as [string, string, string];
const user = (id: string) => ({ type: 'user', id });
const todo = (id: string, owner?: string) => ({
  type: 'todo',
  id,
  ...(owner ? { properties: { ownerID: owner } } : {}),
});

/** The Todo rules: viewer reads; editor also creates and changes or deletes its own; admin deletes any; evil_genius changes any. */
const TODO_CASES = {
  evaluation: [
    {
      request: {
        subject: user(CARL),
        action: { name: 'can_read_user' },
        resource: { type: 'user', id: 'anna@example.test' },
      },
      expected: true,
    },
    { request: { subject: user(CARL), action: { name: 'can_read_todos' }, resource: todo('t-1') }, expected: true },
    { request: { subject: user(CARL), action: { name: 'can_create_todo' }, resource: todo('t-1') }, expected: false },
    { request: { subject: user(BEN), action: { name: 'can_create_todo' }, resource: todo('t-1') }, expected: true },
    {
      request: { subject: user(BEN), action: { name: 'can_update_todo' }, resource: todo('t-2', 'ben@example.test') },
      expected: true,
    },
    {
      request: { subject: user(BEN), action: { name: 'can_update_todo' }, resource: todo('t-3', 'anna@example.test') },
      expected: false,
    },
    {
      request: { subject: user(BEN), action: { name: 'can_delete_todo' }, resource: todo('t-3', 'anna@example.test') },
      expected: false,
    },
    {
      request: { subject: user(ANNA), action: { name: 'can_delete_todo' }, resource: todo('t-2', 'ben@example.test') },
      expected: true,
    },
    {
      request: { subject: user(ANNA), action: { name: 'can_update_todo' }, resource: todo('t-4', 'carl@example.test') },
      expected: true,
    },
    // Not a stored user: only the always-true rule holds.
    {
      request: { subject: user('dXNlci1ub2JvZHk'), action: { name: 'can_read_todos' }, resource: todo('t-1') },
      expected: false,
    },
  ],
  evaluations: [
    {
      request: {
        subject: user(BEN),
        action: { name: 'can_delete_todo' },
        evaluations: [{ resource: todo('t-2', 'ben@example.test') }, { resource: todo('t-3', 'anna@example.test') }],
      },
      expected: [{ decision: true }, { decision: false }],
    },
    {
      request: {
        subject: user(CARL),
        resource: todo('t-1'),
        evaluations: [
          { action: { name: 'can_read_todos' } },
          { action: { name: 'can_create_todo' } },
          { subject: user(ANNA), action: { name: 'can_create_todo' } },
        ],
      },
      expected: [{ decision: true }, { decision: false }, { decision: true }],
    },
  ],
};
/** The gateway's route checks: HTTP methods as actions, route templates as resources. */
const route = (id: string, method: string, path: string) => ({
  subject: { type: 'identity', id },
  action: { name: method },
  resource: { type: 'route', id: path },
});
const GATEWAY_CASES = {
  evaluation: [
    { request: route(CARL, 'GET', '/todos'), expected: true },
    { request: route(CARL, 'GET', '/users/{userId}'), expected: true },
    { request: route(CARL, 'POST', '/todos'), expected: false },
    { request: route(CARL, 'DELETE', '/todos/{todoId}'), expected: false },
    { request: route(BEN, 'PUT', '/todos/{todoId}'), expected: true },
    { request: route(ANNA, 'DELETE', '/todos/{todoId}'), expected: true },
  ],
};

describe('scripts/authzen-interop.mjs against authz serve', () => {
  let server: FreshServe;
  let dir: string;
  const script = async (args: string[], env: NodeJS.ProcessEnv = {}) => {
    try {
      const { stdout, stderr } = await run(process.execPath, [SCRIPT, ...args], {
        cwd: ROOT,
        env: { ...process.env, ...env },
      });
      return { code: 0, stdout, stderr };
    } catch (e) {
      const error = e as { code?: number; stdout?: string; stderr?: string };
      return { code: error.code ?? -1, stdout: error.stdout ?? '', stderr: error.stderr ?? '' };
    }
  };
  const file = (name: string, value: unknown) => {
    const path = join(dir, name);
    writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value, null, 1));
    return path;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'authz-interop-script-'));
    server = await startFreshServe('authz-interop-serve-');
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('--help explains itself; usage errors and an unreachable service exit 2', async () => {
    const help = await script(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--attributes FILE');
    expect(help.stdout).toContain('decisions-authorization-api-1_0-02.json');
    const unknown = await script(['--nope']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('usage:');
    const noKey = await script(['x.json'], { AUTHZ_API_KEY: '' });
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('no API key');
    const unreachable = await script([
      '--url',
      'http://127.0.0.1:1',
      '--key',
      server.testKey,
      file('one.json', GATEWAY_CASES),
    ]);
    expect(unreachable.code).toBe(2);
    expect(unreachable.stderr).toContain('is the service running?');
  });

  it('our own Todo and gateway files: every decision as the rules say on the stored attributes; a wrong expectation fails', async () => {
    const base = ['--url', server.base, '--key', server.testKey];
    const users = file('users.json', USERS);
    const passed = await script([
      ...base,
      '--attributes',
      users,
      '--quiet',
      file('todo.json', TODO_CASES),
      file('gateway.json', GATEWAY_CASES),
    ]);
    expect(passed.code, passed.stdout + passed.stderr).toBe(0);
    expect(passed.stdout).toContain('stored the attributes of 3 subjects');
    expect(passed.stdout).toContain('todo.json: evaluation 10/10, evaluations 2/2');
    expect(passed.stdout).toContain('gateway.json: evaluation 6/6');
    expect(passed.stdout).not.toContain('FAIL');
    // The attributes decide: stored through the script, shown by the service.
    const anna = await fetch(`${server.base}/v1/agents/${ANNA}`, {
      headers: { authorization: `Bearer ${server.testKey}` },
    });
    expect(((await anna.json()) as { attributes: unknown }).attributes).toEqual(USERS[ANNA as keyof typeof USERS]);

    // A wrong expectation (Carl, a viewer, may not create) is a FAIL with what came back, and exit 1.
    const wrong = { evaluation: [TODO_CASES.evaluation[1], { ...TODO_CASES.evaluation[2], expected: true }] };
    const failed = await script([...base, '--quiet', file('wrong.json', wrong)]);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toContain('wrong.json: evaluation 1/2');
    expect(failed.stdout).toMatch(/FAIL evaluation .*can_create_todo[\s\S]*expected true, got 200 \{"decision":false/);

    // The users from a scenario page in Markdown (its "Attributes associated with users" block): Carl made an editor.
    const page = `# Payload Spec\n\n## Attributes associated with users (expected to come from PIP)\n\n\`\`\`js\n${JSON.stringify({ [CARL]: { email: 'carl@example.test', roles: ['editor'] } })}\n\`\`\`\n`;
    const promoted = await script([
      ...base,
      '--attributes',
      file('scenario.md', page),
      '--quiet',
      file('create.json', { evaluation: [{ ...TODO_CASES.evaluation[2], expected: true }] }),
    ]);
    expect(promoted.code, promoted.stdout + promoted.stderr).toBe(0);
    expect(promoted.stdout).toContain('create.json: evaluation 1/1');
    const noBlock = await script([
      ...base,
      '--attributes',
      file('empty.md', '# nothing here\n'),
      file('create2.json', TODO_CASES),
    ]);
    expect(noBlock.code).toBe(2);
    expect(noBlock.stderr).toContain('Attributes associated with users');

    // The working group's own files, read from the openid/authzen mirror when this machine has it.
    if (!existsSync(MIRROR)) {
      console.log(
        `no openid/authzen mirror at ${MIRROR}: the working group's files were not run (our own cases above were)`,
      );
      return;
    }
    const fromMirror = (path: string, name: string) =>
      file(name, execFileSync('git', ['-C', MIRROR, 'show', `HEAD:${path}`], { encoding: 'utf8' }));
    const scenario = fromMirror(
      'interop/authzen-interop-website/docs/scenarios/todo-1.0-id/index.md',
      'todo-1.0-id.md',
    );
    const todoFile = fromMirror(
      'interop/authzen-todo-backend/test/decisions-authorization-api-1_0-02.json',
      'decisions-authorization-api-1_0-02.json',
    );
    const gatewayFile = fromMirror(
      'interop/authzen-api-gateways/test-harness/test/decisions.json',
      'gateway-decisions.json',
    );
    const wg = await script([...base, '--attributes', scenario, '--quiet', todoFile, gatewayFile]);
    console.log(wg.stdout);
    expect(wg.code, wg.stdout + wg.stderr).toBe(0);
    expect(wg.stdout).toContain('stored the attributes of 5 subjects');
    expect(wg.stdout).toContain('decisions-authorization-api-1_0-02.json: evaluation 40/40, evaluations 3/3');
    expect(wg.stdout).toContain('gateway-decisions.json: evaluation 25/25');
  }, 120_000);
});
