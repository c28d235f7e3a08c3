/**
 * A new user's mistakes on the command line, typed into the real bin
 * (`node bin/authz.js ...`): each usage error prints its cause on one line and
 * where the command's usage is (`authz <command> --help`), exit 2, nothing on
 * stdout; an unknown command, subcommand or option names the closest known one;
 * never the 45-line global usage nor Node's own parseArgs message. And the
 * compiler's commands' --help: every option explained, examples (the first one
 * run here as printed), and the command's own exit codes.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, ROOT } from '../../helpers/server-process.js';

const run = promisify(execFile);

async function shell(command: string): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run('sh', ['-c', command], {
      cwd: ROOT,
      env: { ...process.env, AUTHZ_API_KEY: '', AUTHZ_ADMIN_TOKEN: '' },
    });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const failed = e as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

const BIN = `${process.execPath} ${join(ROOT, 'bin', 'authz.js')}`;
const authz = (args: string) => shell(`${BIN} ${args}`);

describe('usage errors: one line with the cause, then `authz <command> --help`', () => {
  beforeAll(() => ensureBuilt(), 120_000);

  const MISTAKES: Array<[string, string, string]> = [
    [
      'valdate examples',
      'authz: unknown command "valdate" (did you mean validate?)',
      'run `authz --help` for the list of commands',
    ],
    [
      'explian examples',
      'authz: unknown command "explian" (did you mean explain?)',
      'run `authz --help` for the list of commands',
    ],
    [
      'explain examples --agent support-bot-1 --action payments.refund --resouce order:1',
      'authz explain: unknown option --resouce (did you mean --resource?)',
      'run `authz explain --help` for its options and examples',
    ],
    [
      'explain examples --agent support-bot-1',
      'authz explain: missing --action NAMESPACE.VERB (e.g. payments.refund)',
      'run `authz explain --help` for its options and examples',
    ],
    [
      'explain examples --action payments.refund --agent',
      'authz explain: --agent needs a value (--agent VALUE)',
      'run `authz explain --help` for its options and examples',
    ],
    [
      'validate examples --strict=yes',
      'authz validate: --strict takes no value',
      'run `authz validate --help` for its options and examples',
    ],
    [
      'validate examples --fromat json',
      'authz validate: unknown option --fromat (did you mean --format?)',
      'run `authz validate --help` for its options and examples',
    ],
    [
      'validate no/such/dir',
      'authz validate: no such file or directory: no/such/dir',
      'run `authz validate --help` for its options and examples',
    ],
    [
      'compile examples',
      'authz compile: missing -o FILE, where to write the bundle (-o - for standard output)',
      'run `authz compile --help` for its options and examples',
    ],
    [
      'compile examples --ouput b.json',
      'authz compile: unknown option --ouput (did you mean --output?)',
      'run `authz compile --help` for its options and examples',
    ],
    [
      'test examples --covrage',
      'authz test: unknown option --covrage (did you mean --coverage?)',
      'run `authz test --help` for its options and examples',
    ],
    [
      'diff examples',
      'authz diff: two policy sets expected, OLD and NEW (got 1)',
      'run `authz diff --help` for its options and examples',
    ],
    [
      'push bundle.json --yse',
      'authz push: unknown option --yse (did you mean --yes?)',
      'run `authz push --help` for its options and examples',
    ],
    [
      'keys crate --account acc_1',
      'authz keys: unknown subcommand "crate" (did you mean create?)',
      'run `authz keys --help` for its options and examples',
    ],
    [
      'keys create --acount acc_1',
      'authz keys create: unknown option --acount (did you mean --account?)',
      'run `authz keys create --help` for its options and examples',
    ],
    [
      'serve --bundel bundle.json',
      'authz serve: unknown option --bundel (did you mean --bundle?)',
      'run `authz serve --help` for its options and examples',
    ],
    [
      'replay examples --sinse 7d --key k',
      'authz replay: unknown option --sinse (did you mean --since?)',
      'run `authz replay --help` for its options and examples',
    ],
  ];

  it.each(MISTAKES)('authz %s', async (args, cause, where) => {
    const r = await authz(args);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`${cause}\n${where}\n`);
  });

  it('an unknown word close to nothing gets no guess', async () => {
    const r = await authz('frobnicate');
    expect(r.stderr).toBe('authz: unknown command "frobnicate"\nrun `authz --help` for the list of commands\n');
  });
});

describe('the compiler commands --help: options, examples, exit codes', () => {
  beforeAll(() => ensureBuilt(), 120_000);

  it.each(['validate', 'compile', 'test', 'explain', 'diff'])('authz %s --help', async (command) => {
    const { stdout, code } = await authz(`${command} --help`);
    expect(code).toBe(0);
    const [synopsis, ...rest] = stdout.split('\n');
    const body = rest.join('\n');
    // Every option of the synopsis is explained on a line of its own.
    const options = [
      ...new Set(
        [...`${synopsis} ${stdout.split('\n')[1]}`.matchAll(/(?<![\w-])--[a-z-]+|(?<![\w-])-o\b/g)].map((m) => m[0]),
      ),
    ];
    expect(options.length).toBeGreaterThan(0);
    for (const option of options)
      expect(body, `${command} ${option}`).toMatch(new RegExp(`^ {2}(-o, )?${option}\\b`, 'm'));
    // Examples, each a command line of this command.
    const examples = /^examples:\n((?: {2}.*\n)+)/m.exec(stdout)?.[1] ?? '';
    expect(examples, command).toMatch(new RegExp(`^ {2}(git .*&& )?authz ${command} `, 'm'));
    // This command's exit codes, not the generic list.
    expect(stdout).toMatch(/^exit codes: 0 [\s\S]*, 1 [\s\S]*, 2 usage error/m);
  });

  it.each(['validate', 'test', 'explain'])('the first example of authz %s --help runs as printed', async (command) => {
    const help = (await authz(`${command} --help`)).stdout;
    const first = /^examples:\n {2}((?:[^\n]*\\\n)*[^\n]*)/m.exec(help)![1]!.replace(/\\\n\s*/g, '');
    const r = await shell(first.replace(/^authz /, `${BIN} `));
    expect(r.code, `${first}\n${r.stderr}`).toBe(0);
  });
});
