/**
 * The layering rules of the code map, enforced on the tree as it is: routes ->
 * domain services -> store; the compiler reached only through compiler/index.ts;
 * the store importing nothing above it but the tenant types; no import cycle
 * (type-only imports included); public JSON forms (`object: '...'`) built only
 * in runtime/presenters (docs/architecture.md: "What the import-graph test
 * enforces").
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  importCycles,
  importEdges,
  nonReexportStatements,
  PRESENTERS,
  publicFormLiterals,
  RULES,
  violations,
  type ImportEdge,
} from './import-graph.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function trackedSources(): string[] {
  return execFileSync('git', ['ls-files', '*.ts', '*.js'], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter(
      (f) =>
        /^(runtime|compiler|bench|examples|clients|permit-verifier|webhook-receiver)\//.test(f) &&
        !f.includes('/public/'),
    );
}

/**
 * The shipped code whose public forms must come from the presenters: the
 * runtime (the dashboard's browser modules included), the compiler, the
 * clients, the verifier and the webhook helpers. Left out: bench/ (a bare
 * Fastify baseline and generated fixture decisions stand in for the service)
 * and examples/ (code a user writes against the API). The clients build no
 * public form in TypeScript; the Python client's one stand-in (a decision it
 * knows was confirmed but cannot read back: `_calls.confirmed_elsewhere`) is
 * its own answer to its caller, not the service's.
 */
function shippedSources(): string[] {
  return execFileSync('git', ['ls-files', '*.ts', '*.js'], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter((f) => /^(runtime|compiler|clients|permit-verifier|webhook-receiver)\//.test(f));
}

describe('import graph', () => {
  // `imports` marks the type-only ones; `edges` is the plain graph (who imports whom).
  const imports = importEdges(ROOT, trackedSources());
  const edges: ImportEdge[] = imports.map(({ from, to }) => ({ from, to }));

  it('reads the imports of the tree', () => {
    expect(edges.length).toBeGreaterThan(300);
    expect(edges).toContainEqual({
      from: 'runtime/routes/decisions.ts',
      to: 'runtime/domain/decisions.ts',
    } satisfies ImportEdge);
  });

  it('keeps every rule', () => {
    expect(violations(imports)).toEqual([]);
  });

  it('has no import cycle, type-only imports included', () => {
    expect(importCycles(imports)).toEqual([]);
  });

  it('finds a cycle, a type-only one too, and nothing in a graph without one', () => {
    const chain: ImportEdge[] = [
      { from: 'runtime/domain/a.ts', to: 'runtime/events/b.ts' },
      { from: 'runtime/events/b.ts', to: 'runtime/presenters/c.ts' },
      { from: 'runtime/presenters/c.ts', to: 'fastify' },
    ];
    expect(importCycles(chain)).toEqual([]);
    const typeBack: ImportEdge = { from: 'runtime/presenters/c.ts', to: 'runtime/domain/a.ts', typeOnly: true };
    expect(importCycles([...chain, typeBack])).toEqual([
      ['runtime/domain/a.ts', 'runtime/events/b.ts', 'runtime/presenters/c.ts', 'runtime/domain/a.ts'],
    ]);
    expect(importCycles([{ from: 'clients/x.ts', to: 'clients/x.ts' }])).toEqual([['clients/x.ts', 'clients/x.ts']]);
  });

  it('reads type-only imports as such', () => {
    const typeOnly = imports.filter((e) => e.typeOnly);
    expect(typeOnly.length).toBeGreaterThan(100);
    expect(typeOnly).toContainEqual({
      from: 'runtime/presenters/budget.ts',
      to: 'runtime/domain/budgets.ts',
      typeOnly: true,
    } satisfies ImportEdge);
    expect(imports).toContainEqual({
      from: 'runtime/presenters/decision.ts',
      to: 'runtime/domain/decision-state.ts',
    } satisfies ImportEdge);
  });

  it('builds public forms (`object: ...`) only in the presenters', () => {
    const outside = shippedSources()
      .filter((f) => !f.startsWith(`${PRESENTERS}/`))
      .flatMap((f) => publicFormLiterals(f, readFileSync(`${ROOT}${f}`, 'utf8')));
    expect(outside).toEqual([]);
  });

  it('tells a public form literal from a type and a comment', () => {
    expect(
      publicFormLiterals(
        'r.ts',
        "const a = { id, object: 'api_key', revoked: true };\nreturn { 'object': `list`, data };",
      ),
    ).toEqual(['r.ts:1', 'r.ts:2']);
    expect(
      publicFormLiterals(
        'r.ts',
        "interface L { object: 'list'; data: T[] }\n/** { object: 'list' } */\nconst k = { object: kind };",
      ),
    ).toEqual([]);
  });

  it('compiler/index.ts only re-exports', () => {
    expect(nonReexportStatements(readFileSync(`${ROOT}compiler/index.ts`, 'utf8'))).toEqual([]);
  });

  it('each rule refuses the edge it is about and lets the others through', () => {
    // [the rule's index in RULES, an edge it must refuse]
    const bad: Array<[number, ImportEdge]> = [
      [0, { from: 'runtime/routes/agents.ts', to: 'runtime/store/agents.ts' }],
      [1, { from: 'runtime/domain/decisions.ts', to: 'compiler/table/evaluate.ts' }],
      [1, { from: 'bench/http/server.ts', to: 'compiler/policy/types.ts' }],
      [2, { from: 'runtime/store/limits.ts', to: 'runtime/spend-limits/limit-request.ts' }],
      [3, { from: 'runtime/tenant.ts', to: 'runtime/ids.ts' }],
      [4, { from: 'compiler/compile.ts', to: 'runtime/ids.ts' }],
      [5, { from: 'runtime/domain/policies.ts', to: 'runtime/http/yaml.ts' }],
      [5, { from: 'runtime/store/connect.ts', to: 'fastify' }],
      [6, { from: 'clients/mcp-proxy/cli.ts', to: 'runtime/cli/http-client.ts' }],
      [6, { from: 'clients/adapters/vercel-ai.ts', to: 'compiler/index.ts' }],
      [6, { from: 'clients/mcp-proxy/config.ts', to: 'compiler/policy/types.ts' }],
      [7, { from: 'runtime/presenters/decision.ts', to: 'clients/typescript/types.ts' }],
      [8, { from: 'runtime/shared/group-commit.ts', to: 'runtime/store/connect.ts' }],
      [9, { from: 'compiler/patterns/action-names.ts', to: 'compiler/policy/types.ts' }],
      [10, { from: 'runtime/domain/decision-state.ts', to: 'runtime/domain/decisions.ts', typeOnly: true }],
      [10, { from: 'runtime/domain/decision-state.ts', to: 'runtime/store/decisions.ts' }],
      [11, { from: 'runtime/presenters/decision.ts', to: 'runtime/domain/decisions.ts' }],
      [11, { from: 'runtime/events/build.ts', to: 'runtime/domain/approvals.ts' }],
      [12, { from: 'runtime/domain/policies.ts', to: 'runtime/presenters/policy.ts' }],
      [12, { from: 'runtime/domain/bundles.ts', to: 'runtime/presenters/policy.ts', typeOnly: true }],
      [13, { from: 'runtime/serve.ts', to: 'runtime/background/budgets.ts' }],
      [13, { from: 'runtime/app.ts', to: 'runtime/background/policy-refresh.ts' }],
      [14, { from: 'permit-verifier/permit-claims.ts', to: 'runtime/errors/api-error.ts' }],
      [14, { from: 'permit-verifier/create-verifier.ts', to: 'clients/typescript/types.ts', typeOnly: true }],
    ];
    expect(new Set(bad.map(([i]) => i)).size).toBe(RULES.length);
    for (const [i, edge] of bad)
      expect(RULES[i]!.check(edge), `${RULES[i]!.name}: ${edge.from} -> ${edge.to}`).not.toBeNull();
    const good: ImportEdge[] = [
      { from: 'runtime/routes/agents.ts', to: 'runtime/domain/agents.ts' },
      { from: 'runtime/domain/decisions.ts', to: 'compiler/index.ts' },
      { from: 'runtime/store/agents.ts', to: 'runtime/tenant.ts' },
      { from: 'runtime/store/connect.ts', to: 'postgres' },
      { from: 'runtime/domain/agents.ts', to: 'runtime/store/agents.ts' },
      { from: 'clients/mcp-proxy/enforce.ts', to: 'permit-verifier/args-digest.ts' },
      { from: 'clients/mcp-proxy/enforce.ts', to: 'clients/typescript/index.ts' },
      { from: 'clients/mcp-proxy/actions.ts', to: 'compiler/patterns/action-names.ts' },
      { from: 'compiler/patterns/action-names.ts', to: 'compiler/patterns/action.ts' },
      { from: 'runtime/domain/decision-state.ts', to: 'runtime/store/decisions.ts', typeOnly: true },
      { from: 'runtime/presenters/budget.ts', to: 'runtime/domain/budgets.ts', typeOnly: true },
      { from: 'runtime/presenters/decision.ts', to: 'runtime/domain/decision-state.ts' },
      { from: 'runtime/presenters/decision.ts', to: 'clients/typescript/wire.ts', typeOnly: true },
      { from: 'runtime/serve.ts', to: 'runtime/background/start.ts' },
      { from: 'runtime/background/start.ts', to: 'runtime/background/reviews.ts' },
      { from: 'runtime/services.ts', to: 'runtime/background/budgets.ts', typeOnly: true },
      { from: 'bench/reviews/run.ts', to: 'runtime/background/reviews.ts' },
      { from: 'runtime/permits/verify.ts', to: 'permit-verifier/permit-claims.ts' },
      { from: 'permit-verifier/create-verifier.ts', to: 'permit-verifier/permit-token.ts' },
      { from: 'permit-verifier/create-verifier.ts', to: 'jose' },
    ];
    expect(violations(good)).toEqual([]);
  });
});
