/**
 * The layering rules of the code map, enforced on the tree as it is: routes ->
 * domain services -> store; the compiler reached only through compiler/index.ts;
 * the store importing nothing above it but the tenant types.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { importEdges, nonReexportStatements, RULES, violations, type ImportEdge } from './import-graph.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function trackedSources(): string[] {
  return execFileSync('git', ['ls-files', '*.ts', '*.js'], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter((f) => /^(runtime|compiler|bench|examples|clients|verifier|webhooks)\//.test(f) && !f.includes('/public/'));
}

describe('import graph', () => {
  const edges = importEdges(ROOT, trackedSources());

  it('reads the imports of the tree', () => {
    expect(edges.length).toBeGreaterThan(300);
    expect(edges).toContainEqual({ from: 'runtime/routes/decisions.ts', to: 'runtime/domain/decisions.ts' } satisfies ImportEdge);
  });

  it('keeps every rule', () => {
    expect(violations(edges)).toEqual([]);
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
      [2, { from: 'runtime/store/limits.ts', to: 'runtime/limits/limit-request.ts' }],
      [3, { from: 'runtime/tenant.ts', to: 'runtime/ids.ts' }],
      [4, { from: 'compiler/compile.ts', to: 'runtime/ids.ts' }],
      [5, { from: 'runtime/domain/policies.ts', to: 'runtime/http/yaml.ts' }],
      [5, { from: 'runtime/store/connect.ts', to: 'fastify' }],
      [6, { from: 'clients/mcp-proxy/cli.ts', to: 'runtime/cli/http-client.ts' }],
      [6, { from: 'clients/adapters/vercel-ai.ts', to: 'compiler/index.ts' }],
      [7, { from: 'runtime/presenters/decision.ts', to: 'clients/typescript/types.ts' }],
      [8, { from: 'runtime/shared/group-commit.ts', to: 'runtime/store/connect.ts' }],
    ];
    expect(new Set(bad.map(([i]) => i)).size).toBe(RULES.length);
    for (const [i, edge] of bad) expect(RULES[i]!.check(edge), `${RULES[i]!.name}: ${edge.from} -> ${edge.to}`).not.toBeNull();
    const good: ImportEdge[] = [
      { from: 'runtime/routes/agents.ts', to: 'runtime/domain/agents.ts' },
      { from: 'runtime/domain/decisions.ts', to: 'compiler/index.ts' },
      { from: 'runtime/store/agents.ts', to: 'runtime/tenant.ts' },
      { from: 'runtime/store/connect.ts', to: 'postgres' },
      { from: 'runtime/domain/agents.ts', to: 'runtime/store/agents.ts' },
      { from: 'clients/mcp-proxy/enforce.ts', to: 'verifier/args-digest.ts' },
      { from: 'clients/mcp-proxy/enforce.ts', to: 'clients/typescript/index.ts' },
      { from: 'runtime/presenters/decision.ts', to: 'clients/typescript/wire.ts' },
    ];
    expect(violations(good)).toEqual([]);
  });
});
