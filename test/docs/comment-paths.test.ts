/**
 * Source comments name only what the repository has: every path in a comment
 * or test title of the sources and tests (`runtime/store/migrate.ts`,
 * `helpers/postgres.ts` from a file under test/, `docs/api.md#lists`) resolves
 * to a file, and a markdown anchor to one of its headings; and no comment cites
 * a document the repository does not have by a bare "the contract" or "the
 * spec" (test/helpers/comment-paths.ts).
 */
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/docs-error-codes.js';
import {
  bareCitations,
  commentedSourceFiles,
  danglingCommentPaths,
  pathsInComments,
} from '../helpers/comment-paths.js';

describe('paths in source comments', () => {
  it('finds paths in comments only, not in strings, URLs, package names or dist/', () => {
    const text = [
      '/** Reads runtime/ids.ts (see docs/api.md#lists). */',
      "const url = 'runtime/nowhere.ts'; // and events/build.ts:12",
      'const re = /\\/\\/ compiler\\/nothing.ts/; // https://example.com/a/b.md, @scope/pkg/x.js, dist/runtime/x.js',
      '// ./helpers/x.ts, version 1.2.3 and a/b',
    ].join('\n');
    expect(pathsInComments(text, join(REPO_ROOT, 'runtime', 'x.ts'))).toEqual([
      { path: 'runtime/ids.ts', anchor: '', line: 1 },
      { path: 'docs/api.md', anchor: 'lists', line: 1 },
      { path: 'events/build.ts', anchor: '', line: 2 },
      { path: './helpers/x.ts', anchor: '', line: 4 },
    ]);
    expect(pathsInComments('-- see runtime/store/functions/x.sql\nselect 1;', 'x.sql')).toEqual([
      { path: 'runtime/store/functions/x.sql', anchor: '', line: 1 },
    ]);
  });

  it('reports a missing file, a missing anchor, and resolves paths relative to a folder above', () => {
    const file = join(REPO_ROOT, 'runtime', 'domain', 'sample.ts');
    const text = [
      '// fine: runtime/ids.ts, events/build.ts, ../ids.ts, docs/api.md#lists, store/migrate.ts, views/agents.js',
      '// broken: runtime/engine/group-commit.ts, engine/sliced.ts, views/nothing.js, docs/api.md#no-such-heading, docs/nowhere.md',
    ].join('\n');
    expect(
      danglingCommentPaths([{ file, text }]).map(
        (p) => `${p.line} ${p.path}${p.anchor ? `#${p.anchor}` : ''}: ${p.why}`,
      ),
    ).toEqual([
      '2 runtime/engine/group-commit.ts: no such file',
      '2 engine/sliced.ts: no such file',
      '2 views/nothing.js: no such file',
      '2 docs/api.md#no-such-heading: no heading with anchor #no-such-heading',
      '2 docs/nowhere.md: no such file',
    ]);
  });

  it('every path named in a comment of the sources and tests resolves', () => {
    const files = commentedSourceFiles();
    expect(files.length).toBeGreaterThan(300);
    const problems = danglingCommentPaths(files.map((file) => ({ file, text: readFileSync(file, 'utf8') })));
    expect(problems.map((p) => `${p.file}:${p.line}: ${p.path}${p.anchor ? `#${p.anchor}` : ''}: ${p.why}`)).toEqual(
      [],
    );
  });

  it('reads the title of a test as a comment, not its other strings', () => {
    const text = [
      "describe('docs/api.md#lists', () => {",
      "  it.each([1])('runtime/nowhere.ts, not %s/index.js', () => expect('events/none.ts').toBe('x'));",
      '});',
    ].join('\n');
    expect(pathsInComments(text, join(REPO_ROOT, 'test', 'x.test.ts'))).toEqual([
      { path: 'docs/api.md', anchor: 'lists', line: 1 },
      { path: 'runtime/nowhere.ts', anchor: '', line: 2 },
    ]);
  });
});

describe('bare citations in source comments', () => {
  it('finds "the contract" and "the spec" in comments and test titles; a named standard, a path or code is no citation', () => {
    const text = [
      "/** Answers the contract's 409 (contract: conventions). */",
      "it('retries on the spec schedule', () => {});",
      "// The spec's signature; spec 2.5 envelopes; written from the specification.",
      '// The MCP authorization specification, the AuthZEN spec, the OpenAPI spec, the Standard Webhooks specification.',
      "import { expectContractAnswer } from './helpers/contract.js'; // see ./helpers/contract.js",
      "const spec = 'the contract'; const contract = spec;",
    ].join('\n');
    expect(bareCitations(text, 'x.test.ts')).toEqual([
      { text: 'contract', line: 1 },
      { text: 'contract', line: 1 },
      { text: 'spec', line: 2 },
      { text: 'spec', line: 3 },
      { text: 'spec', line: 3 },
      { text: 'specification', line: 3 },
    ]);
    expect(bareCitations('-- as the contract says\nselect 1;', 'x.sql')).toEqual([{ text: 'contract', line: 1 }]);
  });

  it('no comment or test title of the sources and tests cites "the contract" or "the spec"', () => {
    // This file and its helper name the words they look for.
    const guard = new Set(['test/docs/comment-paths.test.ts', 'test/helpers/comment-paths.ts']);
    const files = commentedSourceFiles().filter((file) => !guard.has(relative(REPO_ROOT, file)));
    expect(files.length).toBeGreaterThan(300);
    const found = files.flatMap((file) =>
      bareCitations(readFileSync(file, 'utf8'), file).map((c) => `${relative(REPO_ROOT, file)}:${c.line}: ${c.text}`),
    );
    expect(found, 'name the docs/ section that states the rule instead (docs/api.md#decisions, ...)').toEqual([]);
  });
});
