/** `authz compile PATH... -o bundle.json [--strict] [--format ...]` */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { createBundle } from '../bundle/write.js';
import { countSummary, renderDiagnostics, type OutputFormat } from './diagnostics-format.js';
import { EXIT_OK, EXIT_PROBLEMS, UsageError, type CliIo } from './io.js';
import { loadPolicies } from './load-policies.js';

export interface CompileCommandOptions {
  paths: string[];
  output: string | undefined;
  strict: boolean;
  format: OutputFormat;
}

export function runCompile(options: CompileCommandOptions, io: CliIo): number {
  if (!options.output) throw new UsageError('missing -o FILE, where to write the bundle (-o - for standard output)');
  const loaded = loadPolicies(options.paths, io.cwd, { strict: options.strict });
  const { errors } = countSummary(loaded.diagnostics);
  const log = options.output === '-' ? io.err : io.out;
  if (options.format === 'json') log(JSON.stringify({ ok: errors === 0, diagnostics: loaded.diagnostics }, null, 2));
  else for (const line of renderDiagnostics(loaded.diagnostics, options.format, io.isTTY, loaded.sources)) log(line);
  if (errors > 0 || !loaded.table) {
    log(`not written: ${errors} error${errors === 1 ? '' : 's'}`);
    return EXIT_PROBLEMS;
  }
  const bundle = createBundle(loaded.table);
  const text = `${JSON.stringify(bundle)}\n`;
  if (options.output === '-') io.out(text);
  else {
    writeFileSync(resolve(io.cwd, options.output), text);
    io.out(`wrote ${options.output}: ${bundle.policies.length} policies, ${bundle.hash}`);
  }
  return EXIT_OK;
}
