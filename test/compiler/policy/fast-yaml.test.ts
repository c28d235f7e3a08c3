/**
 * The fast YAML reader answers as the full parser: for any text (in its subset or
 * not, valid or not) readYamlFast gives the same values and diagnostics as
 * readYaml, and every position it knows without the full parser is the one the
 * full parser gives. Texts come from a generator of policy-like documents in many
 * styles, then mutated (a character inserted or removed) to reach the edges.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileSources } from '../../../compiler/compile.js';
import { readYamlFast } from '../../../compiler/policy/fast-source.js';
import { parseYamlFast } from '../../../compiler/policy/fast-yaml.js';
import { readYaml } from '../../../compiler/policy/source.js';

const taken = { fast: 0, all: 0 };

function sameAsFull(text: string): void {
  taken.all++;
  const full = readYaml({ file: 'f.yaml', text });
  const fast = readYamlFast({ file: 'f.yaml', text });
  expect(fast.diagnostics).toEqual(full.diagnostics);
  expect(fast.documents.map((d) => d.value)).toEqual(full.documents.map((d) => d.value));
  const raw = parseYamlFast(text);
  if (raw === null) return;
  taken.fast++;
  expect(full.diagnostics).toEqual([]);
  raw.forEach((doc, k) => {
    for (const pointer of doc.offsets.keys())
      expect(fast.documents[k]!.locator.value(pointer), `${pointer} in\n${text}`).toEqual(
        full.documents[k]!.locator.value(pointer),
      );
  });
  // Positions asked beyond the known ones come from the full parser: the same answers.
  for (const [k, doc] of full.documents.entries()) {
    for (const pointer of ['', '/name', '/policies/0/actions/0', '/policies/1/condition']) {
      expect(fast.documents[k]!.locator.value(pointer)).toEqual(doc.locator.value(pointer));
      expect(fast.documents[k]!.locator.key(pointer)).toEqual(doc.locator.key(pointer));
    }
  }
}

const word = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.constantFrom(
      'orders.read',
      'pay.*',
      'a b',
      'x:y',
      'doc:1:*',
      'true',
      'False',
      'null',
      '~',
      '12',
      '-3',
      '1.5',
      '007',
      'q"t',
      "it's",
      'é✓',
      'a#b',
      'yes',
      'x,y',
      'a\\b',
    ),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '0x1F',
      '1e3',
      '.inf',
      '#x',
      'a #b',
      '',
      ' lead',
      'trail ',
      'a: b',
      '-',
      '- x',
      '{x}',
      '[x]',
      '*',
      '&a',
      '!t',
      '%p',
      '@a',
    ),
  },
);

/** A scalar written in one of the styles YAML allows (some invalid on purpose). */
const scalar = fc.tuple(word, fc.constantFrom('plain', 'plain', 'double', 'single', 'json')).map(([w, style]) => {
  if (style === 'double') return `"${w.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  if (style === 'single') return `'${w.replace(/'/g, "''")}'`;
  if (style === 'json') return JSON.stringify(w);
  return w;
});
const flowSeq = fc.array(scalar, { maxLength: 4 }).map((xs) => `[${xs.join(', ')}]`);
const flowMap = fc
  .array(fc.tuple(fc.constantFrom('amount', 'period', 'unit', 'a b', '"q"'), scalar), { maxLength: 3 })
  .map((kv) => `{${kv.map(([k, v]) => `${k}: ${v}`).join(', ')}}`);
const blockScalar = fc.tuple(
  fc.constantFrom('|', '|-', '>', '>-', '|', '|-', '>', '>-', '|+', '>2'),
  fc
    .tuple(
      fc.constantFrom('line one', 'two  words', '# not a comment'),
      fc.array(fc.constantFrom('line one', 'two  words', 'line one', '', '  deeper', '# not a comment'), {
        maxLength: 3,
      }),
    )
    .map(([a, rest]) => [a, ...rest]),
);
const comment = fc.constantFrom('', '', '', '', '', '  # note', ' #', '#x');

type Val =
  | { kind: 'inline'; text: string }
  | { kind: 'block'; header: string; lines: string[] }
  | { kind: 'list'; items: string[]; indentless: boolean };
const value: fc.Arbitrary<Val> = fc.oneof(
  fc.oneof(scalar, flowSeq, flowMap).map((text) => ({ kind: 'inline' as const, text })),
  blockScalar.map(([header, lines]) => ({ kind: 'block' as const, header, lines })),
  fc
    .tuple(fc.array(scalar, { minLength: 1, maxLength: 3 }), fc.boolean())
    .map(([items, indentless]) => ({ kind: 'list' as const, items, indentless })),
);
const policy = fc.uniqueArray(
  fc.tuple(
    fc.constantFrom(
      'name',
      'effect',
      'actions',
      'agents',
      'condition',
      'description',
      'budget',
      'priority',
      'id',
      '"quoted key"',
    ),
    value,
    comment,
  ),
  { minLength: 1, maxLength: 5, selector: ([k]) => k },
);

function writeMap(entries: Array<[string, Val, string]>, indent: number, firstPrefix: string | null): string[] {
  const out: string[] = [];
  entries.forEach(([key, v, c], i) => {
    const pad = i === 0 && firstPrefix !== null ? firstPrefix : ' '.repeat(indent);
    if (v.kind === 'inline') out.push(`${pad}${key}: ${v.text}${c}`);
    else if (v.kind === 'block') {
      out.push(`${pad}${key}: ${v.header}`);
      for (const l of v.lines) out.push(l === '' ? '' : `${' '.repeat(indent + 2)}${l}`);
    } else {
      out.push(`${pad}${key}:${c}`);
      for (const item of v.items) out.push(`${' '.repeat(v.indentless ? indent : indent + 2)}- ${item}`);
    }
  });
  return out;
}

const documentText = fc
  .tuple(
    fc.array(policy, { minLength: 1, maxLength: 3 }),
    fc.constantFrom('list', 'single', 'multi'),
    fc.constantFrom('compact', 'dash-alone', 'flow'),
    fc.boolean(),
  )
  .map(([policies, shape, itemStyle, leadingComment]) => {
    const lines: string[] = leadingComment ? ['# policies', ''] : [];
    if (shape === 'single') lines.push(...writeMap(policies[0]!, 0, null));
    else if (shape === 'multi')
      policies.forEach((p, i) => lines.push(...(i > 0 ? ['---'] : []), ...writeMap(p, 0, null)));
    else {
      lines.push('policies:');
      for (const p of policies) {
        if (itemStyle === 'compact') lines.push(...writeMap(p, 4, '  - '));
        else if (itemStyle === 'dash-alone') lines.push('  -', ...writeMap(p, 4, null));
        else
          lines.push(
            `  - {${p
              .filter(([, v]) => v.kind === 'inline')
              .map(([k, v]) => `${k}: ${(v as { text: string }).text}`)
              .join(', ')}}`,
          );
        lines.push('');
      }
    }
    return `${lines.join('\n')}\n`;
  });

const mutated = fc
  .tuple(
    documentText,
    fc.nat(),
    fc.constantFrom(
      '',
      ' ',
      ':',
      '-',
      '#',
      '"',
      "'",
      '[',
      ']',
      '\n',
      '&',
      '*',
      '|',
      '>',
      '{',
      ',',
      '\t',
      '  ',
      '\\',
      '?',
      '---\n',
    ),
    fc.boolean(),
  )
  .map(([text, at, ch, remove]) => {
    const i = at % (text.length + 1);
    return remove ? text.slice(0, i) + text.slice(i + 1) : text.slice(0, i) + ch + text.slice(i);
  });

describe('fast YAML reading', () => {
  it('reads generated policy documents as the full parser does (values, diagnostics, positions)', () => {
    taken.fast = taken.all = 0;
    fc.assert(fc.property(documentText, sameAsFull), { numRuns: 600 });
    // Not a vacuous property: a good share of the texts took the fast path.
    expect(taken.fast).toBeGreaterThan(taken.all / 5);
  });

  it('reads mutated documents as the full parser does, errors included', () => {
    fc.assert(fc.property(mutated, sameAsFull), { numRuns: 1500 });
  });

  it('reads every YAML file of the repository as the full parser does', () => {
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (/\.ya?ml$/.test(name)) files.push(path);
      }
    };
    walk('examples');
    walk('test');
    expect(files.length).toBeGreaterThan(10);
    let fast = 0;
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      sameAsFull(text);
      if (parseYamlFast(text) !== null) fast++;
    }
    // The examples are in the subset: the fast path is the one taken.
    expect(fast).toBeGreaterThan(files.length / 2);
  });

  it('gives a diagnostic the same file:line:column through the fast path as through the full parser', () => {
    const text =
      'policies:\n  - name: ok\n    effect: allow\n    actions: [orders.read]\n  - name: bad\n    effect: maybe\n    actions: ["orders.read"]\n    condition: amount <= "50"\n';
    expect(parseYamlFast(text)).not.toBeNull();
    const d = compileSources([{ file: 'p.yaml', text }]).diagnostics.map(
      (x) => `${x.file}:${x.line}:${x.col} ${x.code}`,
    );
    expect(d).toEqual(['p.yaml:6:13 policy.invalid_field', 'p.yaml:8:23 condition.type']);
  });

  it('leaves what is outside its subset to the full parser', () => {
    for (const text of [
      'a: &x 1\nb: *x\n',
      'a: !tag 1\n',
      'a: 1\na: 2\n',
      'a: [1,\n  2]\n',
      'a: "\\x41"\n',
      'a: b\n  c\n',
      'a:\tb\n',
      'a: 0x1F\n',
    ]) {
      expect(parseYamlFast(text), text).toBeNull();
      sameAsFull(text);
    }
  });
});
