/** `authz validate PATH... [--strict] [--format text|json|github]` */
import { countSummary, plural, renderDiagnostics, type OutputFormat } from './diagnostics-format.js';
import { EXIT_OK, EXIT_PROBLEMS, type CliIo } from './io.js';
import { loadPolicies } from './load-policies.js';

export interface ValidateOptions {
  paths: string[];
  strict: boolean;
  format: OutputFormat;
}

export function runValidate(options: ValidateOptions, io: CliIo): number {
  const loaded = loadPolicies(options.paths, io.cwd, { strict: options.strict });
  const { errors, warnings } = countSummary(loaded.diagnostics);
  if (options.format === 'json') {
    io.out(
      JSON.stringify(
        {
          ok: errors === 0,
          files: loaded.files,
          policies: loaded.policies.length,
          errors,
          warnings,
          diagnostics: loaded.diagnostics,
        },
        null,
        2,
      ),
    );
  } else {
    for (const line of renderDiagnostics(loaded.diagnostics, options.format, io.isTTY, loaded.sources)) io.out(line);
    if (options.format === 'text') {
      io.out(
        `${plural(loaded.files.length, 'file')}, ${plural(loaded.policies.length, 'policy').replace('policys', 'policies')}: ${plural(errors, 'error')}, ${plural(warnings, 'warning')}`,
      );
    }
  }
  return errors === 0 ? EXIT_OK : EXIT_PROBLEMS;
}
