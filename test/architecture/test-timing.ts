/**
 * Finds, in a test file's text, what makes a test depend on how fast the
 * machine is (docs/benchmarks.md: no test asserts a duration):
 *
 * - `duration`: an `expect(...)` that compares an elapsed wall-clock time: a
 *   difference with `Date.now()`, `performance.now()` or `process.hrtime`, or a
 *   variable, property or function result holding one;
 * - `sleep`: an awaited fixed wait (`await sleep(300)`, `await new Promise((r)
 *   => setTimeout(r, 300))`) that is not inside a loop, i.e. a sleep used to let
 *   things settle rather than the pause of a poll.
 *
 * A line scanner for prettier-formatted TypeScript (block structure read from
 * indentation), not a parser: it errs on the side of reporting, and the test
 * allow-lists what remains with the reason it is needed.
 *
 * @example
 * timingFindings('t.test.ts', 'const t0 = Date.now();\nexpect(Date.now() - t0).toBeLessThan(100);')
 * // => [{ file: 't.test.ts', line: 2, kind: 'duration', text: 'expect(Date.now() - t0).toBeLessThan(100);' }]
 */

export interface TimingFinding {
  file: string;
  /** 1-based. */
  line: number;
  kind: 'duration' | 'sleep';
  /** The line, trimmed. */
  text: string;
}

const CLOCK_READ = String.raw`(?:Date\.now\(\)|performance\.now\(\)|process\.hrtime(?:\.bigint)?\([^)]*\))`;
const COMPARISON =
  /\.(?:not\.)?(?:toBeLessThan|toBeLessThanOrEqual|toBeGreaterThan|toBeGreaterThanOrEqual|toBeCloseTo)\(/;
const ASSIGNMENT = /^\s*(?:export\s+)?(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*(?::[^=]+)?=\s*(.+)$/;
const PROPERTY = /([A-Za-z_$][\w$]*)\s*:\s*([^,}]+)/g;
const FUNCTION_HEADER =
  /^\s*(?:export\s+)?(?:(?:async\s+)?function\s*\*?\s*([A-Za-z_$][\w$]*)|(?:const|let)\s+([A-Za-z_$][\w$]*)\s*=\s*(?:async\s*)?(?:\([^)]*\)|[A-Za-z_$][\w$]*)\s*(?::[^=]+)?=>)/;
const AWAITED_SLEEP = [
  /\bawait\s+new\s+Promise\s*(?:<[^>]*>)?\(\s*\(?\s*([A-Za-z_$][\w$]*)\s*\)?\s*=>\s*setTimeout\(\s*\1\s*,\s*[\d_]+\s*\)\s*\)/,
  /\bawait\s+(?:sleep|delay|wait|setTimeout|pause)\(\s*[\d_]+\s*\)/,
];
const LOOP_HEADER = /^\s*(?:\}\s*)?(?:while|for|do)\b/;

const indentOf = (line: string): number => line.length - line.trimStart().length;
const words = (names: Iterable<string>): string => [...names].map((n) => n.replace(/\$/g, '\\$')).join('|');

/** Whether `text` subtracts a clock reading (or a name holding one) or subtracts from one. */
function hasElapsed(text: string, clockNames: Set<string>): boolean {
  const clock = clockNames.size > 0 ? `(?:${CLOCK_READ}|\\b(?:${words(clockNames)})\\b)` : CLOCK_READ;
  return new RegExp(`${clock}\\s*-(?!=)`).test(text) || new RegExp(`[\\w)\\]]\\s*-\\s*${clock}`).test(text);
}

/** Every duration assertion and settling sleep of one file. */
export function timingFindings(file: string, text: string): TimingFinding[] {
  const lines = text.split('\n');
  // Names holding a clock reading (a start, a deadline), then names holding an elapsed time.
  const clockNames = new Set<string>();
  for (const line of lines) {
    const m = ASSIGNMENT.exec(line);
    if (m && new RegExp(CLOCK_READ).test(m[2]!)) clockNames.add(m[1]!);
  }
  const elapsedNames = new Set<string>();
  const elapsedProps = new Set<string>();
  const elapsedFunctions = new Set<string>();
  const functions: Array<{ indent: number; name: string }> = [];
  for (const line of lines) {
    if (line.trim() === '') continue;
    while (functions.length > 0 && indentOf(line) <= functions.at(-1)!.indent && !/^\s*[})\]]/.test(line))
      functions.pop();
    const header = FUNCTION_HEADER.exec(line);
    if (header) functions.push({ indent: indentOf(line), name: header[1] ?? header[2]! });
    if (!hasElapsed(line, clockNames)) continue;
    const assigned = ASSIGNMENT.exec(line);
    if (assigned && hasElapsed(assigned[2]!, clockNames)) elapsedNames.add(assigned[1]!);
    for (const p of line.matchAll(PROPERTY)) if (hasElapsed(p[2]!, clockNames)) elapsedProps.add(p[1]!);
    const returned = /\breturn\b(.*)$/.exec(line);
    if (returned && hasElapsed(returned[1]!, clockNames) && functions.length > 0)
      elapsedFunctions.add(functions.at(-1)!.name);
  }
  if (elapsedFunctions.size > 0) {
    for (const line of lines) {
      const m = ASSIGNMENT.exec(line);
      if (m && new RegExp(`^(?:await\\s+)?(?:${words(elapsedFunctions)})\\(`).test(m[2]!.trim()))
        elapsedNames.add(m[1]!);
    }
  }
  const elapsedName = elapsedNames.size > 0 ? new RegExp(`\\b(?:${words(elapsedNames)})\\b`) : null;
  const elapsedProp = elapsedProps.size > 0 ? new RegExp(`\\.(?:${words(elapsedProps)})\\b`) : null;

  const findings: TimingFinding[] = [];
  lines.forEach((line, i) => {
    const at = line.indexOf('expect(');
    const matcher = COMPARISON.exec(line);
    if (at >= 0 && matcher && matcher.index > at) {
      const subject =
        line.slice(at, matcher.index + matcher[0].length) + line.slice(matcher.index + matcher[0].length).split(')')[0];
      if (hasElapsed(subject, clockNames) || elapsedName?.test(subject) || elapsedProp?.test(subject)) {
        findings.push({ file, line: i + 1, kind: 'duration', text: line.trim() });
      }
    }
    if (AWAITED_SLEEP.some((re) => re.test(line)) && !insideLoop(lines, i))
      findings.push({ file, line: i + 1, kind: 'sleep', text: line.trim() });
  });
  return findings;
}

/** Whether line `i` is in a loop: a one-line `while (...) await ...`, or a loop among the block headers enclosing it. */
function insideLoop(lines: string[], i: number): boolean {
  if (LOOP_HEADER.test(lines[i]!)) return true;
  let indent = indentOf(lines[i]!);
  for (let j = i - 1; j >= 0 && indent > 0; j--) {
    const line = lines[j]!;
    if (line.trim() === '' || indentOf(line) >= indent) continue;
    indent = indentOf(line);
    if (LOOP_HEADER.test(line)) return true;
    if (/^\s*[)\]]/.test(line)) {
      // The end of a header prettier wrapped over several lines (`for (\n ...\n) {`, `for (x of [\n ...\n].y()) {`): its start is the
      // nearest line above at the same indentation.
      let k = j - 1;
      while (k >= 0 && (lines[k]!.trim() === '' || indentOf(lines[k]!) > indent)) k--;
      if (k >= 0 && LOOP_HEADER.test(lines[k]!)) return true;
      j = k + 1;
    }
  }
  return false;
}
