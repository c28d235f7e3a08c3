/**
 * `authz test PATH... [--coverage] [--format text|json]`: runs every `*.test.yaml`
 * under PATHs. Each test file runs against the policy files it lists in
 * `policies:` (relative to it) or, by default, every policy file in its own
 * directory and below.
 */
import { dirname, resolve } from 'node:path';
import { compileSources, type CompileResult } from '../compile.js';
import type { Diagnostic } from '../diagnostics/diagnostic.js';
import { diffLines, runCase, type CaseResult } from '../testing/run-tests.js';
import { readTestFile } from '../testing/test-file.js';
import { renderDiagnostics, type OutputFormat } from './diagnostics-format.js';
import { findYamlFiles, isPolicyFile, isTestFile, readSource } from './files.js';
import { EXIT_OK, EXIT_PROBLEMS, UsageError, type CliIo } from './io.js';

export interface TestCommandOptions {
  paths: string[];
  coverage: boolean;
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
    const policyFiles = findYamlFiles(suite.policies ? suite.policies.map((p) => resolve(base, p)) : [base], io.cwd).filter(isPolicyFile);
    const key = policyFiles.join('\n');
    let set = sets.get(key);
    if (!set) {
      const sources = policyFiles.map((f) => readSource(f, io.cwd));
      set = { files: sources.map((s) => s.file), compiled: compileSources(sources), sources: new Map(sources.map((s) => [s.file, s.text])), exercised: new Set() };
      sets.set(key, set);
    }
    const problems = set.compiled.diagnostics.filter((d) => d.severity === 'error');
    if (!set.compiled.table) {
      reports.push({ file: source.file, name: suite.name, results: [], diagnostics: problems.length ? problems : [{ severity: 'error', code: 'test.no_policies', message: 'no policies to test', file: source.file }] });
      continue;
    }
    const table = set.compiled.table;
    const results = suite.cases.map((c) => runCase(table, c));
    for (const r of results) for (const p of r.actual.matched) set.exercised.add(p.id);
    reports.push({ file: source.file, name: suite.name, results, diagnostics: [], setKey: key });
  }
  const passed = reports.reduce((n, r) => n + r.results.filter((c) => c.passed).length, 0);
  const failed = reports.reduce((n, r) => n + r.results.filter((c) => !c.passed).length, 0);
  const broken = reports.filter((r) => r.diagnostics.length > 0).length;
  const uncovered = [...sets.values()].flatMap((s) =>
    s.compiled.policies.filter((p) => !s.exercised.has(p.id)).map((p) => ({ id: p.id, origin: s.compiled.origins.get(p.id) })),
  );
  const total = [...sets.values()].reduce((n, s) => n + s.compiled.policies.length, 0);
  if (options.format === 'json') {
    io.out(
      JSON.stringify(
        {
          ok: failed === 0 && broken === 0,
          passed,
          failed,
          suites: reports.map((r) => ({
            file: r.file,
            name: r.name,
            diagnostics: r.diagnostics,
            cases: r.results.map((c) => ({ name: c.name, line: c.line, passed: c.passed, diffs: c.diffs, actual: { ...c.actual, matched: c.actual.matched.map((p) => p.id) } })),
          })),
          ...(options.coverage ? { coverage: { policies: total, exercised: total - uncovered.length, not_exercised: uncovered.map((u) => u.id) } } : {}),
        },
        null,
        2,
      ),
    );
  } else {
    for (const r of reports) {
      io.out(`${r.file}${r.name !== r.file ? ` (${r.name})` : ''}`);
      for (const line of renderDiagnostics(r.diagnostics, options.format, false, new Map())) io.out(`  ${line}`);
      for (const c of r.results) {
        io.out(`  ${c.passed ? 'PASS' : 'FAIL'}  ${c.name}${c.passed ? '' : `  (${r.file}:${c.line})`}`);
        if (!c.passed) for (const line of diffLines(c)) io.out(`        ${line}`);
      }
    }
    if (options.coverage) {
      io.out(`coverage: ${total - uncovered.length}/${total} policies matched by at least one case`);
      for (const u of uncovered) io.out(`  not exercised: ${u.id}${u.origin?.file ? ` (${u.origin.file}:${u.origin.line})` : ''}`);
    }
    io.out(`${passed} passed, ${failed} failed${broken ? `, ${broken} test file${broken === 1 ? '' : 's'} could not run` : ''}`);
  }
  return failed === 0 && broken === 0 ? EXIT_OK : EXIT_PROBLEMS;
}
