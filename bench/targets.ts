/**
 * Targets a benchmark checked, with what it measured: each sub-benchmark writes
 * bench/<topic>/targets.json beside its REPORT.md, and bench/run.ts gathers them
 * into the table at the top of bench/REPORT.md.
 */
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../compiler/index.js';

export interface TargetResult {
  /** What was aimed at, e.g. "allow with token on PostgreSQL >= 50% of bare Fastify". */
  target: string;
  /** The figure measured in this run, e.g. "31% (3120 vs 10050 req/s)". */
  measured: string;
  met: boolean;
}

const file = (topic: string) => join(packageRoot(), 'bench', topic, 'targets.json');

export function writeTargets(topic: string, targets: TargetResult[]): void {
  writeFileSync(file(topic), `${JSON.stringify(targets, null, 2)}\n`);
}

export function readTargets(topic: string): TargetResult[] {
  return existsSync(file(topic)) ? (JSON.parse(readFileSync(file(topic), 'utf8')) as TargetResult[]) : [];
}

/** "met" / "NOT met", as the reports print it. */
export const verdict = (met: boolean) => (met ? 'met' : 'NOT met');
