/**
 * How every `authz` command reads its arguments and reports a mistake in them:
 * one line with the cause (an unknown command or option gets "did you mean"),
 * then where the command's usage is (`authz <command> --help`), never the whole
 * global usage nor Node's own parseArgs message. The runtime's commands (serve,
 * keys, push) and replay use the same functions.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError } from './io.js';

/**
 * The closest of `candidates` to a mistyped `word` (edit distance at most 2, or a
 * third of the word's length when longer), or undefined when none is that close.
 *
 * @example
 * ```ts
 * import { closest } from 'agent-authz/compiler';
 *
 * console.log(closest('valdate', ['validate', 'compile', 'test']), closest('--resouce', ['--resource', '--agent'])); // => validate --resource
 * console.log(closest('frobnicate', ['validate', 'compile'])); // => undefined
 * ```
 */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  const limit = Math.max(2, Math.floor(word.length / 3));
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const d = editDistance(word.toLowerCase(), c.toLowerCase());
    if (d <= limit && d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  return best;
}

/** Levenshtein distance, a transposition of two neighbours counting as one edit. */
function editDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = d;
    }
  }
  return rows[a.length]![b.length]!;
}

/**
 * ` (did you mean X?)` when a candidate is close to `word` ({@link closest}), else ''.
 *
 * @example
 * ```ts
 * import { didYouMean } from 'agent-authz/compiler';
 *
 * console.log(`unknown command "valdate"${didYouMean('valdate', ['validate', 'test'])}`); // => unknown command "valdate" (did you mean validate?)
 * console.log(JSON.stringify(didYouMean('zzz', ['validate']))); // => ""
 * ```
 */
export function didYouMean(word: string, candidates: readonly string[]): string {
  const near = closest(word, candidates);
  return near === undefined ? '' : ` (did you mean ${near}?)`;
}

/**
 * What a usage error prints: the cause on one line, then where the command's
 * usage is. `command` is what follows `authz` (`explain`, `keys create`).
 *
 * @example
 * ```ts
 * import { usageProblem } from 'agent-authz/compiler';
 *
 * console.log(usageProblem('explain', 'missing --agent ID'));
 * // => authz explain: missing --agent ID
 * // => run `authz explain --help` for its options and examples
 * ```
 */
export function usageProblem(command: string, message: string): string {
  return `authz ${command}: ${message}\nrun \`authz ${command} --help\` for its options and examples`;
}

/** The options of a command, as parseArgs takes them. */
export type Options = NonNullable<ParseArgsConfig['options']>;
/** What {@link readArguments} returns: parseArgs' answer for those options. */
export type ReadArguments<O extends Options> = ReturnType<
  typeof parseArgs<{ args: string[]; options: O; allowPositionals: true; strict: true }>
>;

/**
 * `parseArgs` (positionals allowed, strict) whose mistakes are UsageErrors in our
 * words: an unknown option names the closest known one, an option missing its
 * value or given one it does not take says so.
 *
 * @example
 * ```ts
 * import { readArguments } from 'agent-authz/compiler';
 *
 * const options = { resource: { type: 'string' }, all: { type: 'boolean' } };
 * console.log(readArguments(['a.yaml', '--resource', 'r'], options).values.resource); // => r
 * try { readArguments(['--resouce', 'r'], options); } catch (e) { console.log(e.message); } // => unknown option --resouce (did you mean --resource?)
 * try { readArguments(['--resource'], options); } catch (e) { console.log(e.message); } // => --resource needs a value (--resource VALUE)
 * ```
 */
export function readArguments<O extends Options>(args: readonly string[], options: O): ReadArguments<O> {
  try {
    return parseArgs({ args: [...args], options, allowPositionals: true, strict: true });
  } catch (e) {
    throw new UsageError(argumentProblem(e as Error & { code?: string }, options));
  }
}

function argumentProblem(e: Error & { code?: string }, options: Options): string {
  const quoted = /'([^']+)'/.exec(e.message)?.[1] ?? '';
  const flag = quoted.split(/[ =]/)[0]!;
  const known = Object.entries(options).flatMap(([name, o]) => [`--${name}`, ...(o.short ? [`-${o.short}`] : [])]);
  switch (e.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `unknown option ${flag}${didYouMean(flag, known)}`;
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE': {
      // Node names the option as '--all', '--resource <value>' or '-o, --output <value>'.
      const long = /--[^\s,'=]+/.exec(quoted)?.[0] ?? flag;
      return /does not take/.test(e.message) ? `${long} takes no value` : `${long} needs a value (${long} VALUE)`;
    }
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return `unexpected argument ${JSON.stringify(quoted)}`;
    default:
      throw e;
  }
}
