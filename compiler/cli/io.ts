/** Where CLI commands write: injected so tests can run commands in-process. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  /** Whether stdout is a terminal (code frames, colour). */
  isTTY: boolean;
  cwd: string;
}

/** The process's own stdout, stderr and working directory: {@link main}'s default `io`. */
export const processIo: CliIo = {
  out: (text) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
  err: (text) => process.stderr.write(text.endsWith('\n') ? text : `${text}\n`),
  isTTY: Boolean(process.stdout.isTTY),
  cwd: process.cwd(),
};

/** Exit codes: 0 fine, 1 the input has problems (or tests failed), 2 usage error. */
export const EXIT_OK = 0;
export const EXIT_PROBLEMS = 1;
export const EXIT_USAGE = 2;

/**
 * A mistake in a command's arguments (an unknown option, a missing path, a bad
 * value): the command prints its message as {@link usageProblem} words it and
 * exits 2 (EXIT_USAGE).
 */
export class UsageError extends Error {}

/**
 * Whether a command's arguments ask for its usage: `--help` or `-h` anywhere
 * before a `--` (after it, they are operands).
 *
 * @example
 * ```ts
 * import { wantsHelp } from 'agent-authz/compiler';
 *
 * console.log(wantsHelp(['policies', '--help']), wantsHelp(['-h']), wantsHelp(['--', '--help'])); // => true true false
 * ```
 */
export function wantsHelp(args: readonly string[]): boolean {
  for (const a of args) {
    if (a === '--') return false;
    if (a === '--help' || a === '-h') return true;
  }
  return false;
}
