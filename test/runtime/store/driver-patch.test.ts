/**
 * runtime/store/driver-patch.ts: the driver this checkout loads carries the
 * patch (patch-package ran at install), and a connection.js without it is told
 * apart (the unpatched 3.4.9 text, rebuilt here by undoing the patch).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { driverConnectionFile, driverPatched, PATCH_MARKER } from '../../../runtime/store/driver-patch.js';
import { ROOT } from '../../helpers/server-process.js';

describe('the patched postgres.js', () => {
  const dir = mkdtempSync(join(tmpdir(), 'authz-driver-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('the loaded driver (ESM build) is node_modules/postgres/src/connection.js, patched', () => {
    expect(driverConnectionFile()).toBe(join(ROOT, 'node_modules', 'postgres', 'src', 'connection.js'));
    expect(driverPatched()).toBe(true);
  });

  it('a connection.js without the patch, or none at all, is not patched', () => {
    // Undo the patch's added lines for nextWrite: what an install with --ignore-scripts leaves.
    const patched = readFileSync(driverConnectionFile(), 'utf8');
    const unpatched = patched
      .split('\n')
      .filter((line) => !line.includes(PATCH_MARKER))
      .join('\n');
    const file = join(dir, 'connection.js');
    writeFileSync(file, unpatched);
    expect(driverPatched(file)).toBe(false);
    expect(driverPatched(join(dir, 'missing.js'))).toBe(false);
  });
});
