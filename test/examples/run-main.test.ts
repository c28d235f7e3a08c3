/** The start-up every example server shares (examples/shared/run-main.ts). */
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { isMainModule, listenAddress } from '../../examples/shared/run-main.js';
import { ROOT } from '../helpers/server-process.js';

describe('examples/shared/run-main', () => {
  const dir = mkdtempSync(join(tmpdir(), 'authz-run-main-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('listenAddress reads PORT and HOST, with defaults, and refuses a PORT that is not a port', () => {
    expect(listenAddress(4000, {})).toEqual({ port: 4000, host: '127.0.0.1' });
    expect(listenAddress(4000, { PORT: '0', HOST: '::1' })).toEqual({ port: 0, host: '::1' });
    expect(() => listenAddress(4000, { PORT: '70000' })).toThrow('PORT must be a port number, not "70000"');
    expect(() => listenAddress(4000, { PORT: 'http' })).toThrow('PORT must be a port number');
  });

  it('isMainModule is true for the started script, also through a symlink, and false otherwise', () => {
    const file = join(ROOT, 'examples', 'shared', 'run-main.ts');
    const link = join(dir, 'linked.ts');
    symlinkSync(file, link);
    const url = pathToFileURL(file).href;
    expect(isMainModule(url, file)).toBe(true);
    expect(isMainModule(url, link)).toBe(true);
    expect(isMainModule(url, join(ROOT, 'package.json'))).toBe(false);
    expect(isMainModule(url, join(dir, 'missing.js'))).toBe(false);
    expect(isMainModule(url, '')).toBe(false);
  });
});
