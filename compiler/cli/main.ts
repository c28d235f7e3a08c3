/**
 * The `authz` command line: validate, compile, test, explain, diff (serve, keys and push are the runtime's,
 * mcp-proxy is clients/mcp-proxy's, and replay, which is asynchronous, is {@link replayCommand}: bin/authz.js
 * dispatches them; USAGE lists them too).
 */
import { parseArgs } from 'node:util';
import { compilerVersion } from '../version.js';
import { runCompile } from './compile.js';
import { runDiff } from './diff.js';
import type { OutputFormat } from './diagnostics-format.js';
import { runExplain } from './explain.js';
import { EXIT_OK, EXIT_USAGE, UsageError, processIo, wantsHelp, type CliIo } from './io.js';
import { runTestCommand } from './test.js';
import { runValidate } from './validate.js';

export const USAGE = `usage: authz <command> [options]

commands:
  validate PATH...            check policy files; problems as FILE:LINE:COL: message
           [--strict] [--format text|json|github]
  compile PATH... -o FILE     validate, then write the bundle artifact (-o - for stdout)
           [--strict] [--format text|json|github]
  test PATH...                run policy test files (*.test.yaml)
           [--coverage] [--min-coverage PERCENT] [--format text|json|github]
  explain PATH... --agent ID --action NS.VERB [--resource R] [--amount N]
           [--context JSON] [--agent-attributes JSON] [--session ID] [--on-behalf-of USER]
           [--history FILE] [--labels a,b] [--all] [--format text|json]
                              the decision and why, policy by policy (shadow ones marked),
                              with the history values the policies read (--history: earlier
                              decisions, as a test case's history:)
  diff OLD NEW [--sample N] [--format text|json]
                              what changes between two policy sets (bundles or policy
                              files): policies added, removed, changed; winners by action

runtime commands (they run or call the service; --url defaults to AUTHZ_URL or
http://127.0.0.1:8080, --admin-token to AUTHZ_ADMIN_TOKEN):
  serve [--bundle FILE]       run the service (configuration from the environment:
                              authz serve --help lists it)
  keys create (--account ACC_ID | --account-name NAME) [--environment test|live]
           [--scopes SCOPE,...] [--format text|json]
                              a new API key, printed once (--account-name: the
                              one account of that name, made when there is none)
  keys revoke KEY_ID          revoke an API key
  keys rotate [KEY_ID]        no id: a new permit signing key; an id: a new API key
                              like it, the old one revoked at once
  push FILE [--url URL] [--key KEY] [--yes]
                              PUT /v1/bundle a compiled bundle (key: AUTHZ_API_KEY),
                              showing what it adds, changes and removes first;
                              removals asked for, or --yes
  replay BUNDLE [--url URL] [--key KEY] [--since 7d] [--limit N]
           [--format text|json|github] [--quiet]
                              the stored decisions decided again against a candidate:
                              which would change (key: AUTHZ_API_KEY)
  mcp-proxy --config FILE [--listen HOST:PORT] [--public-url URL] [--url URL] [--key KEY]
           [--session ID] (-- COMMAND [ARGS...] | --upstream-url URL)
                              an MCP server that asks the service before every tool
                              call and decided request of the MCP server behind it;
                              with --listen and auth:, a gateway for many agents
                              (authz mcp-proxy --help; docs/mcp.md)

every command answers --help (or -h) with its usage
exit codes: 0 ok, 1 problems found, tests failed, or changes (diff, replay), 2 usage error`;

/** The commands {@link main} runs itself (each answers `--help` with its part of USAGE). */
const COMMANDS = ['validate', 'compile', 'test', 'explain', 'diff'];

/** One command's lines of USAGE (its synopsis and description), then the exit codes. */
export function commandUsage(command: string): string {
  const lines = USAGE.split('\n');
  const start = lines.findIndex((l) => l.startsWith(`  ${command} `));
  const own = [lines[start]!.trimStart()];
  // Its continuation lines: indented deeper than a command's two spaces.
  for (const l of lines.slice(start + 1)) {
    if (!l.startsWith('   ')) break;
    own.push(l.slice(2));
  }
  return `usage: authz ${own.join('\n')}\n\n${lines.at(-1)}`;
}

const FORMATS: readonly OutputFormat[] = ['text', 'json', 'github'];

function format(value: string | undefined): OutputFormat {
  if (value === undefined) return 'text';
  if (!FORMATS.includes(value as OutputFormat)) throw new UsageError(`--format must be one of ${FORMATS.join(', ')}`);
  return value as OutputFormat;
}

function minCoverage(value: string | undefined): { minCoverage?: number } {
  if (value === undefined) return {};
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0 || n > 100) throw new UsageError(`--min-coverage must be a percentage from 0 to 100, not ${value}`);
  return { minCoverage: n };
}

/**
 * Runs one `authz` command of the compiler (`validate`, `compile`, `test`,
 * `explain`, `diff`, `version`, `help`) in-process, as bin/authz.js does with the
 * process's arguments; `authz help` lists them. Output goes to `io`.
 *
 * @param argv - the arguments after `authz`, e.g. `['validate', 'policies/']`.
 * @param io - where to write and the working directory paths are relative to
 *   (default: the process's stdout, stderr and cwd).
 * @returns the exit code: 0 (EXIT_OK), 1 (EXIT_PROBLEMS: problems found, tests
 *   failed), 2 (EXIT_USAGE: bad arguments, missing files).
 * @throws only on an unexpected failure (an unwritable output file, a bug).
 *
 * @example
 * ```ts
 * import { main } from 'agent-authz/compiler';
 *
 * const lines = [];
 * const io = { out: (t) => lines.push(t), err: (t) => lines.push(t), isTTY: false, cwd: process.cwd() };
 * console.log(main(['validate', 'examples/support'], io), lines.at(-1)); // => 0 2 files, 9 policies: 0 errors, 0 warnings
 * console.log(main(['validate', 'no/such/dir'], io)); // => 2
 * ```
 */
export function main(argv: readonly string[], io: CliIo = processIo): number {
  const [command, ...rest] = argv;
  if (command !== undefined && COMMANDS.includes(command) && wantsHelp(rest)) {
    io.out(commandUsage(command));
    return EXIT_OK;
  }
  try {
    switch (command) {
      case 'validate': {
        const { values, positionals } = parseArgs({ args: rest, allowPositionals: true, options: { strict: { type: 'boolean' }, format: { type: 'string' } } });
        return runValidate({ paths: positionals, strict: values.strict ?? false, format: format(values.format) }, io);
      }
      case 'compile': {
        const { values, positionals } = parseArgs({
          args: rest,
          allowPositionals: true,
          options: { output: { type: 'string', short: 'o' }, strict: { type: 'boolean' }, format: { type: 'string' } },
        });
        return runCompile({ paths: positionals, output: values.output, strict: values.strict ?? false, format: format(values.format) }, io);
      }
      case 'test': {
        const { values, positionals } = parseArgs({
          args: rest,
          allowPositionals: true,
          options: { coverage: { type: 'boolean' }, 'min-coverage': { type: 'string' }, format: { type: 'string' } },
        });
        return runTestCommand({ paths: positionals, coverage: values.coverage ?? false, ...minCoverage(values['min-coverage']), format: format(values.format) }, io);
      }
      case 'diff': {
        const { values, positionals } = parseArgs({ args: rest, allowPositionals: true, options: { sample: { type: 'string' }, format: { type: 'string' } } });
        return runDiff({ paths: positionals, ...(values.sample !== undefined ? { sample: values.sample } : {}), format: format(values.format) }, io);
      }
      case 'replay':
        throw new UsageError('replay reads from a service, asynchronously: run it as `authz replay` (bin/authz.js), or call replayCommand()');
      case 'explain': {
        const { values, positionals } = parseArgs({
          args: rest,
          allowPositionals: true,
          options: {
            agent: { type: 'string' },
            action: { type: 'string' },
            resource: { type: 'string' },
            amount: { type: 'string' },
            context: { type: 'string' },
            'agent-attributes': { type: 'string' },
            session: { type: 'string' },
            'on-behalf-of': { type: 'string' },
            history: { type: 'string' },
            labels: { type: 'string' },
            all: { type: 'boolean' },
            format: { type: 'string' },
          },
        });
        const { 'agent-attributes': agentAttributes, 'on-behalf-of': onBehalfOf, ...named } = values;
        return runExplain(
          {
            paths: positionals,
            ...named,
            ...(agentAttributes !== undefined ? { agentAttributes } : {}),
            ...(onBehalfOf !== undefined ? { onBehalfOf } : {}),
            all: values.all ?? false,
            format: format(values.format),
          },
          io,
        );
      }
      case '--version':
      case 'version':
        io.out(compilerVersion());
        return EXIT_OK;
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        io.out(USAGE);
        return command === undefined ? EXIT_USAGE : EXIT_OK;
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (e) {
    if (e instanceof UsageError || (e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      io.err(`authz: ${(e as Error).message}\n\n${USAGE}`);
      return EXIT_USAGE;
    }
    throw e;
  }
}
