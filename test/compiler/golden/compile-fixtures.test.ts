/**
 * Golden tests: each folder of test/fixtures/compile is an input policy set; its
 * expected diagnostics (FILE:LINE:COL: message) are in `expected.txt` and, for a
 * valid set, the bundle it compiles to is in `bundle.json`. Refresh both after an
 * intended change with `npx vitest run test/compiler/golden --update`, and review
 * the diff.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createBundle } from '../../../compiler/bundle/write.js';
import { formatDiagnostic } from '../../../compiler/cli/diagnostics-format.js';
import { compileSources } from '../../../compiler/compile.js';

const root = join(import.meta.dirname, '..', '..', 'fixtures', 'compile');
const repo = join(import.meta.dirname, '..', '..', '..');

describe('compile fixtures', () => {
  for (const name of readdirSync(root).sort()) {
    it(name, async () => {
      const dir = join(root, name);
      const sources = readdirSync(dir)
        .filter((f) => f.endsWith('.yaml'))
        .sort()
        .map((f) => ({ file: relative(repo, join(dir, f)), text: readFileSync(join(dir, f), 'utf8') }));
      const result = compileSources(sources);
      const text = result.diagnostics.map(formatDiagnostic).join('\n');
      await expect(`${text}\n`).toMatchFileSnapshot(join(dir, 'expected.txt'));
      if (result.table) {
        const { compiler: _version, ...bundle } = createBundle(result.table);
        await expect(`${JSON.stringify(bundle, null, 2)}\n`).toMatchFileSnapshot(join(dir, 'bundle.json'));
      }
    });
  }
});
