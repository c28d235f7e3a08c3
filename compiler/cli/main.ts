/**
 * The `authz` command line: validate, compile, test, explain, diff (serve, keys and push are the runtime's,
 * mcp-proxy is clients/mcp-proxy's, and replay, which is asynchronous, is {@link replayCommand}: bin/authz.js
 * dispatches them; USAGE lists them too).
 */
import { compilerVersion } from '../version.js';
import { runCompile } from './compile.js';
import { runDiff } from './diff.js';
import type { OutputFormat } from './diagnostics-format.js';
import { runExplain } from './explain.js';
import { ALL_COMMANDS, COMMAND_HELP, USAGE } from './command-help.js';
import { EXIT_OK, EXIT_USAGE, UsageError, processIo, wantsHelp, type CliIo } from './io.js';
import { runTestCommand } from './test.js';
import { didYouMean, readArguments, usageProblem } from './usage.js';
import { runValidate } from './validate.js';

export { USAGE } from './command-help.js';

/** The commands {@link main} runs itself (each answers `--help` with its COMMAND_HELP). */
type OwnCommand = keyof typeof COMMAND_HELP;
const isOwn = (command: string | undefined): command is OwnCommand =>
  command !== undefined && Object.hasOwn(COMMAND_HELP, command);

const FORMATS: readonly OutputFormat[] = ['text', 'json', 'github'];

function format(value: string | undefined): OutputFormat {
  if (value === undefined) return 'text';
  if (!FORMATS.includes(value as OutputFormat)) throw new UsageError(`--format must be one of ${FORMATS.join(', ')}`);
  return value as OutputFormat;
}

function minCoverage(value: string | undefined): { minCoverage?: number } {
  if (value === undefined) return {};
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0 || n > 100)
    throw new UsageError(`--min-coverage must be a percentage from 0 to 100, not ${value}`);
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
  if (isOwn(command) && wantsHelp(rest)) {
    io.out(COMMAND_HELP[command]);
    return EXIT_OK;
  }
  try {
    switch (command) {
      case 'validate': {
        const { values, positionals } = readArguments(rest, {
          strict: { type: 'boolean' },
          format: { type: 'string' },
        });
        return runValidate({ paths: positionals, strict: values.strict ?? false, format: format(values.format) }, io);
      }
      case 'compile': {
        const { values, positionals } = readArguments(rest, {
          output: { type: 'string', short: 'o' },
          strict: { type: 'boolean' },
          format: { type: 'string' },
        });
        return runCompile(
          { paths: positionals, output: values.output, strict: values.strict ?? false, format: format(values.format) },
          io,
        );
      }
      case 'test': {
        const { values, positionals } = readArguments(rest, {
          coverage: { type: 'boolean' },
          'min-coverage': { type: 'string' },
          format: { type: 'string' },
        });
        return runTestCommand(
          {
            paths: positionals,
            coverage: values.coverage ?? false,
            ...minCoverage(values['min-coverage']),
            format: format(values.format),
          },
          io,
        );
      }
      case 'diff': {
        const { values, positionals } = readArguments(rest, { sample: { type: 'string' }, format: { type: 'string' } });
        return runDiff(
          {
            paths: positionals,
            ...(values.sample !== undefined ? { sample: values.sample } : {}),
            format: format(values.format),
          },
          io,
        );
      }
      case 'replay':
        throw new UsageError(
          'replay reads from a service, asynchronously: run it as `authz replay` (bin/authz.js), or call replayCommand()',
        );
      case 'explain': {
        const { values, positionals } = readArguments(rest, {
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
        io.err(
          `authz: unknown command ${JSON.stringify(command)}${didYouMean(command, ALL_COMMANDS)}\nrun \`authz --help\` for the list of commands`,
        );
        return EXIT_USAGE;
    }
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    io.err(usageProblem(command!, e.message));
    return EXIT_USAGE;
  }
}
