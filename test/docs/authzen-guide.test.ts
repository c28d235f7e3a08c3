/**
 * docs/api.md's AuthZEN section works as written: its shell blocks, taken from
 * the page, run through `sh` against a real `node bin/authz.js serve` on a
 * fresh embedded store (examples/authzen-todo loaded), in the order a reader
 * meets them, in a shell that has only what the page sets: its first block,
 * with what the reader pastes (the operator token the service was started
 * with, the printed test key, the URL), exports AUTHZ_URL and AUTHZ_API_KEY and
 * makes GATEWAY_KEY (decisions:write, decisions:read) and REVIEWER_KEY
 * (reviews:read, reviews:write, policies:read) with `npx authz keys create`;
 * its second stores the five Todo users. Each block prints what
 * its `# ...` comment lines show: the comment is read as a pattern (`...`
 * inside a string is any rest of the string, elsewhere any members; a
 * timestamp is any timestamp; https://authz.example.com is the service).
 *
 * - The evaluation example: Morty may update his todo, with the gateway key.
 * - The Todo scenario: the user's attributes stored by the page's PUT.
 * - Search: who may create a todo (two to a page, Rick and Morty, a token),
 *   what Beth may do with one; the next page with the token gives Summer.
 * - Access requests, one shell session in order: the approval policy, the
 *   requestable denial, the submission (201, the task), the reviewer's
 *   approval, the poll (approved, result.mode reevaluate, the approval), and
 *   the re-evaluation with the approval (decision true, the same decision,
 *   a permit the service verifies), the decision confirmed by that use.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { request, ROOT, startFreshServe, type FreshServe } from '../helpers/server-process.js';

const run = promisify(execFile);
const PAGE = readFileSync(join(ROOT, 'docs', 'api.md'), 'utf8');
const ADMIN_TOKEN = 'authzen-guide-operator-token';
const EXAMPLE_BASE = 'https://authz.example.com';

/** The `lang` blocks of a section of docs/api.md: from its heading line up to the next heading of that level or above (outside code blocks). */
function blocksOf(heading: string, lang: string): string[] {
  const level = heading.indexOf(' ');
  const blocks: string[] = [];
  let inSection = false;
  let fence: { lang: string; lines: string[] } | null = null;
  for (const line of PAGE.split('\n')) {
    if (fence) {
      if (line !== '```') fence.lines.push(line);
      else {
        if (inSection && fence.lang === lang) blocks.push(`${fence.lines.join('\n')}\n`);
        fence = null;
      }
    } else if (line.startsWith('```')) fence = { lang: line.slice(3), lines: [] };
    else if (inSection && /^#+ /.test(line) && line.indexOf(' ') <= level) break;
    else if (line === heading) inSection = true;
  }
  if (!inSection) throw new Error(`docs/api.md has no "${heading}"`);
  return blocks;
}
const shBlocks = (heading: string) => blocksOf(heading, 'sh');

/**
 * What a block's comments say it prints, as one pattern: each group of `# `
 * lines (a continuation line starts with `#  `) is one output, the groups in
 * order, anything between them being white space.
 */
function expectedOutput(block: string, base: string): RegExp {
  const groups: string[][] = [];
  let previousWasComment = false;
  for (const line of block.split('\n')) {
    const comment = line.startsWith('# ');
    if (comment && previousWasComment && line.startsWith('#  ')) groups.at(-1)!.push(line.slice(1).trim());
    else if (comment) groups.push([line.slice(2).trim()]);
    previousWasComment = comment;
  }
  const pattern = groups
    .map((g) =>
      g
        .join('')
        .replaceAll(EXAMPLE_BASE, base)
        .replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
        .replace(/\\\.\\\.\\\."/g, '[^"]*"')
        .replace(/\\\.\\\.\\\./g, '.*?')
        .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\\\.\d{3}Z/g, '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z'),
    )
    .join('\\s*');
  return new RegExp(`^\\s*${pattern}\\s*$`);
}

describe("docs/api.md's AuthZEN curl commands", () => {
  let server: FreshServe | undefined;
  let env: NodeJS.ProcessEnv;
  /** Runs shell text as typed, in one `sh` session; its stdout. */
  const sh = async (script: string) => {
    try {
      return (await run('sh', ['-c', `set -e\n${script}`], { cwd: ROOT, env })).stdout;
    } catch (e) {
      throw new Error(
        `the commands failed: ${(e as { stderr?: string }).stderr ?? e}\n${(e as { stdout?: string }).stdout ?? ''}\n--- script:\n${script}`,
      );
    }
  };
  const marker = (name: string) => `printf '\\n=== %s\\n' '${name}'`;

  beforeAll(async () => {
    server = await startFreshServe('authz-authzen-doc-', { AUTHZ_ADMIN_TOKEN: ADMIN_TOKEN });
    // The shell the reader types in: only what the page tells them to set, set by the page's own block below.
    env = { ...process.env, NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost' };
    for (const name of ['AUTHZ_URL', 'AUTHZ_API_KEY', 'AUTHZ_ADMIN_TOKEN', 'GATEWAY_KEY', 'REVIEWER_KEY'])
      delete env[name];
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  it('the setup runs as typed on the fresh store: the three keys (two made with the operator token), the five users stored', async () => {
    const [keys, users] = shBlocks('### Before the examples: the keys and the Todo users');
    // What the reader pastes: the service's URL, the operator token, the printed test key.
    const typed = keys!
      .replace('export AUTHZ_ADMIN_TOKEN=...', `export AUTHZ_ADMIN_TOKEN=${ADMIN_TOKEN}`)
      .replace('export AUTHZ_API_KEY=svc_test_sk_...', `export AUTHZ_API_KEY=${server!.testKey}`)
      .replaceAll('http://127.0.0.1:8080', server!.base);
    expect(typed).not.toContain('...');
    const out = await sh(
      [
        // `npx authz` is this checkout's bin (a clone's npx finds it in node_modules/.bin).
        `npx() { if [ "$1" = authz ]; then shift; node "${join(ROOT, 'bin', 'authz.js')}" "$@"; else command npx "$@"; fi; }`,
        typed,
        marker('users'),
        users!,
        marker('keys'),
        'printf "%s\\n%s\\n%s\\n%s\\n" "$AUTHZ_URL" "$AUTHZ_API_KEY" "$GATEWAY_KEY" "$REVIEWER_KEY"',
      ].join('\n'),
    );
    const [, afterUsers] = out.split('=== users\n');
    const [printed, variables] = afterUsers!.split('=== keys\n');
    expect(printed).toMatch(expectedOutput(users!, server!.base));
    const [url, apiKey, gatewayKey, reviewerKey] = variables!.trim().split('\n');
    expect(gatewayKey).toMatch(/^svc_test_sk_\w+$/);
    expect(reviewerKey).toMatch(/^svc_test_sk_\w+$/);
    env = { ...env, AUTHZ_URL: url, AUTHZ_API_KEY: apiKey, GATEWAY_KEY: gatewayKey, REVIEWER_KEY: reviewerKey };
    // The keys have the scopes the page gives them.
    const scopes = async (key: string, path: string) => (await request(server!.base, key, 'GET', path)).status;
    expect(await scopes(gatewayKey!, '/v1/decisions?limit=1')).toBe(200);
    expect(await scopes(gatewayKey!, '/v1/policies?limit=1')).toBe(403);
    expect(await scopes(reviewerKey!, '/v1/reviews')).toBe(200);
    expect(await scopes(reviewerKey!, '/v1/policies?limit=1')).toBe(200);
    // The five users, as the scenario has them.
    const beth = await request(
      server!.base,
      server!.testKey,
      'GET',
      '/v1/agents/CiRmZDM2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs',
    );
    expect(beth.body).toMatchObject({ attributes: { email: 'beth@the-smiths.com', roles: ['viewer'] } });
  }, 60_000);

  it('the evaluation example answers as shown, with the gateway key', async () => {
    const [evaluation] = shBlocks('### `POST /access/v1/evaluation`');
    expect(evaluation).toContain('$GATEWAY_KEY');
    const out = await sh(evaluation!);
    expect(out).toMatch(expectedOutput(evaluation!, server!.base));
    expect(JSON.parse(out)).toMatchObject({ decision: true, context: { effect: 'allow', reason: 'policy.matched' } });
  });

  it("shows the Todo scenario's policies as examples/authzen-todo/policies.yaml has them", () => {
    const [shown] = blocksOf('### The Todo scenario', 'yaml');
    const rule = (p: Record<string, unknown>) => ({
      id: p.id,
      effect: p.effect,
      agents: p.agents,
      actions: p.actions,
      resources: p.resources,
      condition: p.condition,
    });
    const file = parse(readFileSync(join(ROOT, 'examples', 'authzen-todo', 'policies.yaml'), 'utf8')) as {
      policies: Array<Record<string, unknown>>;
    };
    const page = parse(shown!) as { policies: Array<Record<string, unknown>> };
    expect(page.policies.map(rule)).toEqual(file.policies.map(rule));
    // Rules on attributes, for every agent: no list of agent ids.
    for (const p of page.policies) expect(p.agents).toEqual(['*']);
  });

  it('the Todo scenario stores a user, and the search commands answer as shown', async () => {
    const [put] = shBlocks('### The Todo scenario');
    expect(put).toContain('curl -X PUT "$AUTHZ_URL/v1/agents/');
    const stored = JSON.parse(await sh(put!));
    expect(stored).toMatchObject({
      object: 'agent',
      attributes: { email: 'morty@the-citadel.com', roles: ['editor'] },
    });
    // The scenario's other users (stored by the setup script), in the order of their ids.
    const others = [
      'CiRmZDA2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs',
      'CiRmZDI2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs',
    ];

    const [search] = shBlocks('### `POST /access/v1/search/subject` and `/access/v1/search/action`');
    const [subjects, actions] = search!.split('\n\n');
    const first = await sh(subjects!);
    expect(first).toMatch(expectedOutput(subjects!, server!.base));
    const page = JSON.parse(first);
    expect(page.results.map((r: { id: string }) => r.id)).toEqual([
      others[0],
      'CiRmZDE2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs',
    ]);
    const out = await sh(actions!);
    expect(out).toMatch(expectedOutput(actions!, server!.base));
    // The next page, as the page says: Summer, and the end.
    const next = await sh(
      subjects!.replace('"page": { "limit": 2 }', `"page": { "limit": 2, "token": "${page.page.next_token}" }`),
    );
    expect(JSON.parse(next)).toEqual({ results: [{ type: 'user', id: others[1] }], page: { next_token: '' } });
  }, 60_000);

  it('the access-request round trip runs as typed, with two keys, and ends with the permit', async () => {
    const blocks = shBlocks('### Access requests for approvals');
    expect(blocks).toHaveLength(6);
    const [, evaluate, submit, approve, poll, reevaluate] = blocks as [string, string, string, string, string, string];
    expect(approve).toContain('$REVIEWER_KEY');
    const names = ['policy', 'evaluate', 'submit', 'approve', 'poll', 'reevaluate'];
    const stdout = await sh(blocks.map((b, i) => `${marker(names[i]!)}\n${b}`).join('\n'));
    const parts = Object.fromEntries(
      stdout
        .split(/^=== /m)
        .slice(1)
        .map((p) => [p.slice(0, p.indexOf('\n')), p.slice(p.indexOf('\n') + 1)]),
    ) as Record<string, string>;
    expect(JSON.parse(parts.policy!)).toMatchObject({
      object: 'policy',
      name: 'refunds-approved-first',
      effect: 'review',
      approval: { required: true },
    });
    for (const [name, block] of [
      ['evaluate', evaluate],
      ['submit', submit],
      ['approve', approve],
      ['poll', poll],
      ['reevaluate', reevaluate],
    ] as const) {
      expect(parts[name], name).toMatch(expectedOutput(block, server!.base));
    }
    // What the answers say of one another.
    const denial = JSON.parse(parts.evaluate!);
    const id = denial.context.evaluation_id as string;
    expect(denial.context.id).toBe(id);
    expect(JSON.parse(parts.submit!).task).toEqual({
      id,
      status: 'pending',
      status_endpoint: `${server!.base}/access/v1/requests/${id}`,
    });
    expect(JSON.parse(parts.approve!)).toMatchObject({
      id,
      status: 'pending',
      review: { status: 'approved', reviewer: 'dana@example.com' },
    });
    const task = JSON.parse(parts.poll!);
    expect(task.result).toEqual({
      mode: 'reevaluate',
      approval: { id, approved_at: expect.any(String), approved_until: expect.any(String) },
    });
    const permitted = JSON.parse(parts.reevaluate!);
    expect(permitted).toMatchObject({ decision: true, context: { id, approval: task.result.approval } });
    const verified = await request(server!.base, server!.testKey, 'POST', '/v1/permits/verify', {
      token: permitted.context.permit_token,
    });
    expect(verified.body).toMatchObject({ valid: true, claims: { dec: id, sub: 'billing-bot' } });
    const decision = await request(server!.base, server!.testKey, 'GET', `/v1/decisions/${id}`);
    expect(decision.body).toMatchObject({
      status: 'confirmed',
      review: { status: 'approved', request_context: { justification: 'customer called about a double charge' } },
    });
  }, 60_000);
});
