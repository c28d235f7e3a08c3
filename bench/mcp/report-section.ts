/**
 * bench/mcp/REPORT.md holds two benchmarks' figures: the latency part
 * (bench:mcp, everything before the sessions heading) and the sessions part
 * (bench:mcp-sessions, from its heading on). Each run replaces its own part
 * and keeps the other's.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../compiler/index.js';

export const REPORT = join(packageRoot(), 'bench', 'mcp', 'REPORT.md');
export const SESSIONS_HEADING = '## Memory under a flood of sessions (`npm run bench:mcp-sessions`)';

function parts(): { latency: string; sessions: string } {
  const text = existsSync(REPORT) ? readFileSync(REPORT, 'utf8') : '';
  const at = text.indexOf(SESSIONS_HEADING);
  return at < 0 ? { latency: text, sessions: '' } : { latency: text.slice(0, at), sessions: text.slice(at) };
}

/** Writes the latency part (bench:mcp), keeping the sessions part. */
export function writeLatencyPart(markdown: string): void {
  const { sessions } = parts();
  writeFileSync(REPORT, sessions === '' ? markdown : `${markdown.trimEnd()}\n\n${sessions}`);
}

/** Writes the sessions part (bench:mcp-sessions, starting with SESSIONS_HEADING), keeping the latency part. */
export function writeSessionsPart(markdown: string): void {
  const { latency } = parts();
  writeFileSync(REPORT, latency.trim() === '' ? markdown : `${latency.trimEnd()}\n\n${markdown}`);
}
