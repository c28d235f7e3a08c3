/**
 * The GitHub Action (action.yml at the repository root): every step that runs
 * `authz` is run here as the runner would, with bash, its `env:` filled in from
 * the inputs (`${{ inputs.x }}`, `${{ inputs.a || inputs.b }}`), its `if:`
 * evaluated, and GITHUB_ACTION_PATH pointing at this checkout, against a copy of
 * examples/. The install step (npm ci) and the setup-node step are the runner's
 * business and are not run.
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ensureBuilt, ROOT } from '../helpers/server-process.js';
import { KEY, startExportServer, storedDecision, type ExportServer } from '../compiler/cli/export-server.js';

interface Step {
  id?: string;
  name?: string;
  uses?: string;
  if?: string;
  env?: Record<string, string>;
  run?: string;
}

const action = parse(readFileSync(join(ROOT, 'action.yml'), 'utf8')) as {
  inputs: Record<string, { default?: string }>;
  runs: { using: string; steps: Step[] };
};

type Inputs = Record<string, string>;

/** The value of `inputs.a` or `inputs.a || inputs.b` (the first non-empty one, as GitHub's || does). */
function expression(text: string, inputs: Inputs): string {
  const values = text.split('||').map((part) => {
    const m = /^\s*inputs\.([a-z-]+)\s*$/.exec(part);
    if (!m) throw new Error(`unsupported expression: ${text}`);
    if (!(m[1]! in action.inputs)) throw new Error(`no input ${m[1]}`);
    return inputs[m[1]!] ?? action.inputs[m[1]!]!.default ?? '';
  });
  return values.find((v) => v !== '') ?? '';
}

const substitute = (text: string, inputs: Inputs) =>
  text.replace(/\$\{\{(.*?)\}\}/g, (_, e: string) => expression(e, inputs));

/** `inputs.a != '' && inputs.b != ''`. */
function condition(text: string | undefined, inputs: Inputs): boolean {
  if (text === undefined) return true;
  return text.split('&&').every((part) => {
    const m = /^\s*inputs\.([a-z-]+)\s*!=\s*''\s*$/.exec(part);
    if (!m) throw new Error(`unsupported if: ${text}`);
    return expression(`inputs.${m[1]}`, inputs) !== '';
  });
}

interface StepRun {
  name: string;
  code: number;
  out: string;
}

/** Runs every authz step the runner would run with these inputs, in order, in `cwd`. */
async function runAction(inputs: Inputs, cwd: string): Promise<StepRun[]> {
  const runs: StepRun[] = [];
  for (const step of authzSteps()) {
    if (!condition(step.if, inputs)) continue;
    const env = Object.fromEntries(Object.entries(step.env ?? {}).map(([k, v]) => [k, substitute(v, inputs)]));
    const result = await new Promise<StepRun>((resolve) => {
      execFile(
        'bash',
        ['-e', '-c', step.run!],
        { cwd, env: { PATH: process.env.PATH, HOME: process.env.HOME, GITHUB_ACTION_PATH: ROOT, ...env } },
        (error, stdout, stderr) => {
          resolve({
            name: step.name!,
            code: error ? Number((error as { code?: number }).code ?? 1) : 0,
            out: stdout + stderr,
          });
        },
      );
    });
    runs.push(result);
  }
  return runs;
}

function authzSteps(): Step[] {
  return action.runs.steps.filter((s) => s.run !== undefined && s.id !== 'install');
}

let repo: string;
beforeAll(() => ensureBuilt(), 120_000);

let server: ExportServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A copy of examples/ as the user's repository. */
function userRepo(): string {
  repo = mkdtempSync(join(tmpdir(), 'authz-action-'));
  cpSync(join(ROOT, 'examples'), join(repo, 'examples'), { recursive: true });
  return repo;
}

describe('action.yml', () => {
  it('is a composite action whose steps run authz validate, test --coverage --min-coverage and replay', () => {
    expect(action.runs.using).toBe('composite');
    const commands = authzSteps().map((s) => /bin\/authz\.js" (\w+)/.exec(s.run!)?.[1]);
    expect(commands).toEqual(['validate', 'test', 'replay']);
    expect(authzSteps()[1]!.run).toContain('--coverage --min-coverage');
    // Inputs reach the scripts through env only (never pasted into the script text).
    for (const step of authzSteps()) expect(step.run).not.toContain('${{');
  });

  it('passes on the examples, and skips the replay without a URL and key', async () => {
    const runs = await runAction({ policies: 'examples/support', 'min-coverage': '90' }, userRepo());
    expect(runs.map((r) => [r.name, r.code])).toEqual([
      ['Validate policies', 0],
      ['Test policies', 0],
    ]);
    expect(runs[1]!.out).toContain(
      'coverage: 8/8 policies matched by at least one case, 100% (1 disabled policy not counted)',
    );
  });

  it('fails with annotations on an invalid policy and on coverage below the minimum', async () => {
    const dir = userRepo();
    const file = join(dir, 'examples', 'purchasing', 'policies.yaml');
    writeFileSync(
      file,
      `${readFileSync(file, 'utf8')}\n  - name: never-tested\n    effect: allow\n    actions: ["reports.export"]\n`,
    );
    const covered = await runAction({ policies: 'examples/purchasing', 'min-coverage': '100' }, dir);
    expect(covered.map((r) => r.code)).toEqual([0, 1]);
    expect(covered[1]!.out).toMatch(
      /^::warning file=examples\/purchasing\/policies\.yaml,line=\d+,title=policy not exercised::no test case matches policy pol_never_tested$/m,
    );
    expect(covered[1]!.out).toMatch(
      /^::error title=coverage below minimum::coverage \d+\.\d%25 is below the minimum 100%25$/m,
    );

    writeFileSync(file, readFileSync(file, 'utf8').replace('effect: allow', 'effect: alow'));
    const invalid = await runAction({ policies: 'examples/purchasing' }, dir);
    expect(invalid[0]!.code).toBe(1);
    expect(invalid[0]!.out).toMatch(
      /^::error file=examples\/purchasing\/policies\.yaml,line=\d+,col=\d+,title=policy\.invalid_field::effect must be one of allow, deny, review/m,
    );
  });

  it("replays the service's decisions with annotations, failing only with fail-on-changes", async () => {
    const dir = userRepo();
    // The change under review: small chat refunds only up to USD 30.
    const file = join(dir, 'examples', 'support', 'policies.yaml');
    writeFileSync(
      file,
      readFileSync(file, 'utf8').replace('amount <= 50 && context.channel', 'amount <= 30 && context.channel'),
    );
    const decisions = [10, 40, 45].map((amount, i) =>
      JSON.stringify(
        storedDecision(
          `dec_${i}`,
          {
            agent_id: 'support-bot-1',
            action: 'payments.refund',
            resource: 'order:1',
            amount,
            context: { channel: 'chat' },
          },
          { effect: 'allow', reason: 'policy.matched', policy_id: 'pol_support_refund_small_chat' },
        ),
      ),
    );
    server = await startExportServer({ lines: decisions.length, line: (i) => decisions[i]! });
    const inputs = { policies: 'examples/support', url: server.url, key: KEY, since: '12h' };
    const runs = await runAction(inputs, dir);
    expect(runs.map((r) => [r.name, r.code])).toEqual([
      ['Validate policies', 0],
      ['Test policies', 1], // the change breaks a test case of the examples: an allowed USD 50 refund
      ['Replay recent decisions against the change', 0],
    ]);
    expect(runs[2]!.out).toMatch(
      /^::warning title=authz replay::2 of 3 replayed decisions would go from allow \(policy\.matched\) to deny \(policy\.not_found\) \(e\.g\. dec_1, dec_2\)$/m,
    );
    expect(server.requests[1]).toBe(`/v1/decisions/export?since=${encodeURIComponent('2026-11-20T22:00:00.000Z')}`);
    const strict = await runAction({ ...inputs, 'fail-on-changes': 'true' }, dir);
    expect(strict[2]!.code).toBe(1);
  });
});
