/**
 * `authz test PATH... [--coverage] [--min-coverage N] [--format text|json|github]`:
 * runs every `*.test.yaml` under PATHs. Each test file runs against the policy
 * files it lists in `policies:` (relative to it) or, by default, every policy file
 * in its own directory and below.
 *
 * Coverage: the share of the policies (of every set a test file ran against) that
 * at least one case exercises. An enabled policy is exercised when it is among a
 * case's matching policies; a shadow policy when it is among them with the shadow
 * policies enabled. Disabled policies can match nothing and are left out of the
 * count. `--min-coverage N` (0-100, implies --coverage) fails the run below N%.
 */
import { dirname, resolve } from 'node:path';
import { compileSources, type CompileResult } from '../compile.js';
import type { Diagnostic } from '../diagnostics/diagnostic.js';
import { caseRequest, diffLines, runCase, type CaseResult } from '../testing/run-tests.js';
import { readTestFile } from '../testing/test-file.js';
import { evaluateWithShadow } from '../table/evaluate.js';
import type { PolicyOrigin } from '../policy/read.js';
import { githubAnnotation, plural, renderDiagnostics, type OutputFormat } from './diagnostics-format.js';
import { findYamlFiles, isPolicyFile, isTestFile, readSource } from './files.js';
import { EXIT_OK, EXIT_PROBLEMS, UsageError, type CliIo } from './io.js';

export interface TestCommandOptions {
  paths: string[];
  coverage: boolean;
  /** Percent (0-100): fail when coverage is below it. */
  minCoverage?: number;
  format: OutputFormat;
}

interface SuiteReport {
  file: string;
  name: string;
  results: CaseResult[];
  diagnostics: Diagnostic[];
  setKey?: string;
}

interface PolicySet {
  files: string[];
  compiled: CompileResult;
  sources: Map<string, string>;
  exercised: Set<string>;
}

export function runTestCommand(options: TestCommandOptions, io: CliIo): number {
  if (options.paths.length === 0) throw new UsageError('give at least one test file or directory');
  const testFiles = findYamlFiles(options.paths, io.cwd).filter(isTestFile);
  if (testFiles.length === 0) throw new UsageError(`no test files (*.test.yaml) found in ${options.paths.join(', ')}`);
  const sets = new Map<string, PolicySet>();
  const reports: SuiteReport[] = [];
  for (const abs of testFiles) {
    const source = readSource(abs, io.cwd);
    const { suite, diagnostics } = readTestFile(source);
    if (!suite) {
      reports.push({ file: source.file, name: source.file, results: [], diagnostics });
      continue;
    }
    const base = dirname(abs);
    const policyFiles = findYamlFiles(
      suite.policies ? suite.policies.map((p) => resolve(base, p)) : [base],
      io.cwd,
    ).filter(isPolicyFile);
    const key = policyFiles.join('\n');
    let set = sets.get(key);
    if (!set) {
      const sources = policyFiles.map((f) => readSource(f, io.cwd));
      set = {
        files: sources.map((s) => s.file),
        compiled: compileSources(sources),
        sources: new Map(sources.map((s) => [s.file, s.text])),
        exercised: new Set(),
      };
      sets.set(key, set);
    }
    const problems = set.compiled.diagnostics.filter((d) => d.severity === 'error');
    if (!set.compiled.table) {
      reports.push({
        file: source.file,
        name: suite.name,
        results: [],
        diagnostics: problems.length
          ? problems
          : [{ severity: 'error', code: 'test.no_policies', message: 'no policies to test', file: source.file }],
      });
      continue;
    }
    const table = set.compiled.table;
    const results = suite.cases.map((c) => runCase(table, c));
    for (const r of results) for (const p of r.actual.matched) set.exercised.add(p.id);
    if (table.shadow !== null) {
      for (const c of suite.cases)
        for (const p of evaluateWithShadow(table, caseRequest(c)).matched)
          if (p.state === 'shadow') set.exercised.add(p.id);
    }
    reports.push({ file: source.file, name: suite.name, results, diagnostics: [], setKey: key });
  }
  const passed = reports.reduce((n, r) => n + r.results.filter((c) => c.passed).length, 0);
  const failed = reports.reduce((n, r) => n + r.results.filter((c) => !c.passed).length, 0);
  const broken = reports.filter((r) => r.diagnostics.length > 0).length;
  const coverage = measureCoverage([...sets.values()]);
  const withCoverage = options.coverage || options.minCoverage !== undefined;
  const belowMinimum = options.minCoverage !== undefined && coverage.percent < options.minCoverage;
  const ok = failed === 0 && broken === 0 && !belowMinimum;
  if (options.format === 'json') {
    io.out(
      JSON.stringify(
        {
          ok,
          passed,
          failed,
          suites: reports.map((r) => ({
            file: r.file,
            name: r.name,
            diagnostics: r.diagnostics,
            cases: r.results.map((c) => ({
              name: c.name,
              line: c.line,
              passed: c.passed,
              diffs: c.diffs,
              actual: { ...c.actual, matched: c.actual.matched.map((p) => p.id) },
              ...(c.history.length > 0 ? { history: c.history } : {}),
            })),
          })),
          ...(withCoverage
            ? {
                coverage: {
                  policies: coverage.total,
                  exercised: coverage.total - coverage.uncovered.length,
                  percent: round1(coverage.percent),
                  ...(options.minCoverage !== undefined ? { minimum: options.minCoverage } : {}),
                  not_exercised: coverage.uncovered.map((u) => u.id),
                  disabled_not_counted: coverage.disabled,
                },
              }
            : {}),
        },
        null,
        2,
      ),
    );
    return ok ? EXIT_OK : EXIT_PROBLEMS;
  }
  for (const r of reports) {
    io.out(`${r.file}${r.name !== r.file ? ` (${r.name})` : ''}`);
    for (const line of renderDiagnostics(r.diagnostics, options.format, false, new Map())) io.out(`  ${line}`);
    for (const c of r.results) {
      io.out(`  ${c.passed ? 'PASS' : 'FAIL'}  ${c.name}${c.passed ? '' : `  (${r.file}:${c.line})`}`);
      if (!c.passed) for (const line of diffLines(c)) io.out(`        ${line}`);
      if (!c.passed && options.format === 'github')
        io.out(annotation('error', `test failed: ${c.name}`, diffLines(c).join('\n'), r.file, c.line));
    }
  }
  if (withCoverage) {
    const disabled =
      coverage.disabled > 0
        ? ` (${plural(coverage.disabled, 'disabled policy').replace('policys', 'policies')} not counted)`
        : '';
    io.out(
      `coverage: ${coverage.total - coverage.uncovered.length}/${coverage.total} policies matched by at least one case, ${round1(coverage.percent)}%${disabled}`,
    );
    for (const u of coverage.uncovered) {
      io.out(`  not exercised: ${u.id}${u.origin?.file ? ` (${u.origin.file}:${u.origin.line})` : ''}`);
      if (options.format === 'github')
        io.out(
          annotation(
            'warning',
            'policy not exercised',
            `no test case matches policy ${u.id}`,
            u.origin?.file,
            u.origin?.line,
          ),
        );
    }
    if (belowMinimum) {
      const message = `coverage ${round1(coverage.percent)}% is below the minimum ${options.minCoverage}%`;
      io.out(message);
      if (options.format === 'github') io.out(annotation('error', 'coverage below minimum', message));
    }
  }
  io.out(
    `${passed} passed, ${failed} failed${broken ? `, ${broken} test file${broken === 1 ? '' : 's'} could not run` : ''}`,
  );
  return ok ? EXIT_OK : EXIT_PROBLEMS;
}

interface Coverage {
  /** Policies counted: every enabled and shadow policy of every set. */
  total: number;
  percent: number;
  uncovered: Array<{ id: string; origin: PolicyOrigin | undefined }>;
  /** Disabled policies, left out of the count. */
  disabled: number;
}

function measureCoverage(sets: readonly PolicySet[]): Coverage {
  let total = 0;
  let disabled = 0;
  const uncovered: Coverage['uncovered'] = [];
  for (const s of sets) {
    for (const p of s.compiled.policies) {
      if (p.state === 'disabled') {
        disabled++;
        continue;
      }
      total++;
      if (!s.exercised.has(p.id)) uncovered.push({ id: p.id, origin: s.compiled.origins.get(p.id) });
    }
  }
  return { total, percent: total === 0 ? 100 : ((total - uncovered.length) / total) * 100, uncovered, disabled };
}

const round1 = (x: number) => Math.floor(x * 10) / 10;

/** A GitHub workflow-command annotation. */
function annotation(level: 'error' | 'warning', title: string, message: string, file?: string, line?: number): string {
  return githubAnnotation({
    severity: level,
    code: title,
    message,
    ...(file ? { file } : {}),
    ...(line ? { line } : {}),
  });
}
