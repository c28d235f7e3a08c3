/**
 * The documentation stays navigable from any clone: every relative link in
 * README.md and docs/*.md names a file or folder inside the repository (never
 * ../shared or anything else outside it) and, for `file.md#anchor`, a heading
 * that file has. The README stays a front page: at most 200 lines, with the two
 * commands.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { docFiles, README_PATH, REPO_ROOT } from '../helpers/docs-error-codes.js';
import { headingAnchors, relativeLinks } from '../helpers/markdown-links.js';

interface Problem {
  file: string;
  line: number;
  target: string;
  why: string;
}

/** A markdown file: where it is (or would be) and its text. */
interface Doc {
  file: string;
  text: string;
}

const onDisk = (file: string): Doc => ({ file, text: readFileSync(file, 'utf8') });

/** Every broken relative link of the given files; targets are read from disk. */
function brokenLinks(docs: readonly Doc[]): Problem[] {
  const problems: Problem[] = [];
  const anchorsOf = new Map<string, Set<string>>();
  const anchors = (file: string, text?: string) => {
    let set = anchorsOf.get(file);
    if (!set) anchorsOf.set(file, (set = headingAnchors(text ?? readFileSync(file, 'utf8'))));
    return set;
  };
  for (const { file, text } of docs) {
    const rel = relative(REPO_ROOT, file);
    for (const { target, line } of relativeLinks(text)) {
      const hash = target.indexOf('#');
      const pathPart = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
      const anchor = hash < 0 ? '' : target.slice(hash + 1);
      const resolved = pathPart === '' ? file : resolve(dirname(file), pathPart);
      const report = (why: string) => problems.push({ file: rel, line, target, why });
      if (relative(REPO_ROOT, resolved).split(sep)[0] === '..') {
        report('points outside the repository');
        continue;
      }
      if (pathPart !== '' && !existsSync(resolved)) {
        report('no such file or folder');
        continue;
      }
      const markdown = pathPart === '' || (resolved.endsWith('.md') && statSync(resolved).isFile());
      if (anchor !== '' && markdown && !anchors(resolved, pathPart === '' ? text : undefined).has(anchor)) {
        report(`no heading with anchor #${anchor}`);
      }
    }
  }
  return problems;
}

describe('documentation links', () => {
  it('the link finder sees links outside code only, and GitHub anchors', () => {
    const md = [
      '# Title',
      'A [link](docs/api.md#lists), an [outside one](../shared/spec.md), [web](https://example.com), [here](#title).',
      '`[not a link](nowhere.md)` and',
      '```',
      '[nor this](nowhere.md)',
      '# not a heading',
      '```',
      '## `GET /v1/budgets`',
      '## Policy tests (`*.test.yaml`)',
      '## Title',
    ].join('\n');
    expect(relativeLinks(md)).toEqual([
      { target: 'docs/api.md#lists', line: 2 },
      { target: '../shared/spec.md', line: 2 },
      { target: '#title', line: 2 },
    ]);
    expect([...headingAnchors(md)]).toEqual(['title', 'get-v1budgets', 'policy-tests-testyaml', 'title-1']);
  });

  it('reports links that leave the repository, miss a file or miss a heading', () => {
    const doc: Doc = {
      file: resolve(REPO_ROOT, 'docs', 'sample.md'),
      text: [
        '# Sample',
        '[fine](api.md#lists) [fine too](../README.md) [folder](../runtime/store/) [self](#sample)',
        '[out](../../shared/api-contract.md) [missing](missing.md) [anchor](api.md#no-such-heading) [self](#nothing)',
      ].join('\n'),
    };
    expect(brokenLinks([doc]).map((p) => `${p.line} ${p.target}: ${p.why}`)).toEqual([
      '3 ../../shared/api-contract.md: points outside the repository',
      '3 missing.md: no such file or folder',
      '3 api.md#no-such-heading: no heading with anchor #no-such-heading',
      '3 #nothing: no heading with anchor #nothing',
    ]);
  });

  it('every relative link in README.md and docs/*.md resolves inside the repository', () => {
    const files = docFiles();
    expect(files.length).toBeGreaterThan(5);
    const problems = brokenLinks(files.map(onDisk)).map((p) => `${p.file}:${p.line}: ${p.target}: ${p.why}`);
    expect(problems).toEqual([]);
  });

  it('no documentation file mentions ../shared', () => {
    const offenders = docFiles().filter((file) => readFileSync(file, 'utf8').includes('../shared'));
    expect(offenders.map((f) => relative(REPO_ROOT, f))).toEqual([]);
  });

  it('the README is at most 200 lines and gives the two commands', () => {
    const readme = readFileSync(README_PATH, 'utf8');
    expect(readme.split('\n').length - (readme.endsWith('\n') ? 1 : 0)).toBeLessThanOrEqual(200);
    expect(readme).toContain('npm start');
    expect(readme).toContain('npm test');
  });
});
