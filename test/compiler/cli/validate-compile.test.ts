import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { loadBundle } from '../../../compiler/bundle/load.js';
import { repoRoot, runCli, tempTree } from './run-cli.js';

const GOOD = `policies:
  - name: read
    effect: allow
    actions: ["orders.read"]
`;
const BAD = `policies:
  - name: read
    effect: alow
    actions: ["orders.read"]
    condition: "amount <"
`;

describe('authz validate', () => {
  it('exits 0 on the examples', () => {
    const r = runCli(['validate', 'examples']);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/0 errors/);
  });

  it('prints FILE:LINE:COL: message for each problem and exits 1', () => {
    const dir = tempTree({ 'p/bad.yaml': BAD, 'p/good.yaml': GOOD.replace('read', 'other') });
    const r = runCli(['validate', 'p'], dir);
    expect(r.code).toBe(1);
    const lines = r.out.trim().split('\n');
    expect(lines).toContain('p/bad.yaml:3:13: effect must be one of allow, deny, review, not "alow"');
    expect(lines.some((l) => /^p\/bad\.yaml:5:\d+: condition: /.test(l))).toBe(true);
    expect(r.out).toMatch(/2 files, 1 policy: 2 errors, 0 warnings/);
  });

  it('shows a code frame in a terminal', () => {
    const dir = tempTree({ 'bad.yaml': BAD });
    const r = runCli(['validate', 'bad.yaml'], dir, true);
    expect(r.out).toContain('3 |     effect: alow\n  |             ^');
  });

  it('speaks JSON and GitHub annotations', () => {
    const dir = tempTree({ 'bad.yaml': BAD });
    const json = runCli(['validate', 'bad.yaml', '--format', 'json'], dir);
    const parsed = JSON.parse(json.out);
    expect(parsed).toMatchObject({ ok: false, errors: 2, warnings: 0 });
    expect(parsed.diagnostics[0]).toMatchObject({
      file: 'bad.yaml',
      line: 3,
      col: 13,
      severity: 'error',
      code: 'policy.invalid_field',
      path: '/policies/0/effect',
    });
    const gh = runCli(['validate', 'bad.yaml', '--format', 'github'], dir);
    expect(gh.out).toContain('::error file=bad.yaml,line=3,col=13,title=policy.invalid_field::effect must be one of');
  });

  it('turns lints into errors with --strict', () => {
    const dir = tempTree({
      'p.yaml': `policies:
  - { name: deny-all-deletes, priority: 1, effect: deny, actions: ["*.delete"] }
  - { name: allow-db-delete, priority: 5, effect: allow, actions: ["db.delete"] }
`,
    });
    const loose = runCli(['validate', 'p.yaml'], dir);
    expect(loose.code).toBe(0);
    expect(loose.out).toMatch(/p\.yaml:3:5: warning: policy pol_allow_db_delete .* can never decide/);
    const strict = runCli(['validate', 'p.yaml', '--strict'], dir);
    expect(strict.code).toBe(1);
    expect(strict.out).toMatch(/p\.yaml:3:5: policy pol_allow_db_delete/);
  });

  it("YAML indentation mistakes get a sentence of ours beside the parser's, once per line", () => {
    const dir = tempTree({
      'deeper.yaml': 'policies:\n  - id: pol_a\n    effect: allow\n      actions: [a.b]\n',
      'less.yaml': 'policies:\n  - id: pol_b\n    effect: allow\n   actions: [a.b]\n',
      'tab.yaml': 'policies:\n  - id: pol_c\n\teffect: allow\n',
      'unclosed.yaml':
        'policies:\n  - id: pol_d\n    effect: allow\n    actions: ["a.b"\n  - id: pol_e\n    effect: deny\n',
    });
    const r = runCli(['validate', '.'], dir);
    expect(r.code).toBe(1);
    const lines = r.out.split('\n');
    expect(lines).toContain(
      'deeper.yaml:3:13: indentation: this line is indented deeper or less than the keys beside it; the keys of one policy (or of one list item) start at the same column (the YAML parser: Nested mappings are not allowed in compact mappings)',
    );
    // The parser's second error on that line stays, in its own words only.
    expect(lines).toContain('deeper.yaml:3:13: Implicit keys need to be on a single line');
    expect(lines).toContain(
      'less.yaml:4:1: indentation: this line is indented less than the list item above it, or lacks its "- "; the keys of one list item start at the same column (the YAML parser: Sequence item without - indicator)',
    );
    expect(lines.find((l) => l.startsWith('tab.yaml:3:1: '))).toMatch(
      /^tab\.yaml:3:1: indentation: a tab; YAML indents with spaces only \(the YAML parser: /,
    );
    expect(lines.find((l) => l.startsWith('unclosed.yaml:5:3: '))).toMatch(
      /: a \[ or \{ opened above is not closed \(a missing \] or \}\?\) before this line \(the YAML parser: Flow sequence/,
    );
  });

  it('exits 2 on usage errors', () => {
    expect(runCli(['validate']).code).toBe(2);
    expect(runCli(['validate', 'no/such/dir']).code).toBe(2);
    expect(runCli(['validate', 'examples', '--format', 'xml']).code).toBe(2);
    expect(runCli(['validate', 'examples', '--bogus']).code).toBe(2);
    expect(runCli(['frobnicate']).code).toBe(2);
    expect(runCli([]).code).toBe(2);
    expect(runCli(['validate', '--bogus']).err).toBe(
      'authz validate: unknown option --bogus\nrun `authz validate --help` for its options and examples\n',
    );
  });
});

describe('authz compile', () => {
  it('writes a bundle the bundle schema accepts and the loader restores', () => {
    const dir = tempTree({});
    const out = join(dir, 'bundle.json');
    const r = runCli(['compile', 'examples', '-o', out]);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^wrote .*bundle\.json: \d+ policies, sha256:[0-9a-f]{64}/);
    const bundle = JSON.parse(readFileSync(out, 'utf8'));
    const ajv = new Ajv2020({ strict: false });
    ajv.addSchema(JSON.parse(readFileSync(join(repoRoot, 'schemas/policy.schema.json'), 'utf8')));
    const validate = ajv.compile(JSON.parse(readFileSync(join(repoRoot, 'schemas/bundle.schema.json'), 'utf8')));
    expect(validate(bundle), JSON.stringify(validate.errors)).toBe(true);
    const loaded = loadBundle(bundle);
    expect(loaded.ok).toBe(true);
  });

  it('is deterministic: same policies, same bytes', () => {
    const a = runCli(['compile', 'examples', '-o', '-']).out;
    const b = runCli(['compile', 'examples', '-o', '-']).out;
    expect(a).toBe(b);
  });

  it('writes nothing when there are errors', () => {
    const dir = tempTree({ 'bad.yaml': BAD });
    const r = runCli(['compile', 'bad.yaml', '-o', 'out.json'], dir);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/not written: 2 errors/);
    expect(existsSync(join(dir, 'out.json'))).toBe(false);
  });

  it('needs -o', () => {
    expect(runCli(['compile', 'examples']).code).toBe(2);
  });
});
