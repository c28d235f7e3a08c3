/**
 * The master key of `authz serve`: AUTHZ_MASTER_KEY when set, otherwise the key
 * file, generated once (0600, in a directory made 0700) and read back at every
 * later start; a file readable by others is tightened; a file too short to be a
 * key is refused.
 */
import { lstatSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configFromEnv } from '../../../runtime/config.js';
import { MasterKeyFileError, resolveMasterKey } from '../../../runtime/secrets/master-key.js';

describe('master key', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'authz-master-key-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('defaults the key file to <AUTHZ_DATA_DIR>.master-key, or AUTHZ_MASTER_KEY_FILE', () => {
    expect(configFromEnv({ AUTHZ_DATA_DIR: join(dir, 'data') }).masterKeyFile).toBe(join(dir, 'data.master-key'));
    expect(
      configFromEnv({ AUTHZ_DATA_DIR: join(dir, 'data'), AUTHZ_MASTER_KEY_FILE: join(dir, 'k') }).masterKeyFile,
    ).toBe(join(dir, 'k'));
  });

  it('generates a key file once (0600, its new directory 0700) and reads it back after', () => {
    const file = join(dir, 'new', 'deeper', 'key');
    const made = resolveMasterKey(undefined, file);
    expect(made.source).toBe('generated');
    expect(made.path).toBe(file);
    expect(made.secret).toMatch(/^[A-Za-z0-9_-]{43}$/); // 32 random bytes
    expect(lstatSync(file).mode & 0o777).toBe(0o600);
    expect(lstatSync(join(dir, 'new', 'deeper')).mode & 0o777).toBe(0o700);
    expect(readFileSync(file, 'utf8').trim()).toBe(made.secret);

    const again = resolveMasterKey(undefined, file);
    expect(again).toEqual({ secret: made.secret, source: 'file', path: file });
    // Two files, two keys.
    expect(resolveMasterKey(undefined, join(dir, 'other-key')).secret).not.toBe(made.secret);
  });

  it('prefers AUTHZ_MASTER_KEY and then touches no file', () => {
    const file = join(dir, 'unused-key');
    expect(resolveMasterKey('from-the-environment-0123', file)).toEqual({
      secret: 'from-the-environment-0123',
      source: 'env',
    });
    expect(() => lstatSync(file)).toThrow(/ENOENT/);
  });

  it('tightens a key file others can read, and refuses one too short to be a key', () => {
    const loose = join(dir, 'loose-key');
    writeFileSync(loose, '  an-operator-chosen-key-0123  \n', { mode: 0o644 });
    expect(resolveMasterKey(undefined, loose)).toEqual({
      secret: 'an-operator-chosen-key-0123',
      source: 'file',
      path: loose,
    });
    expect(lstatSync(loose).mode & 0o777).toBe(0o600);

    const short = join(dir, 'short-key');
    writeFileSync(short, 'short\n', { mode: 0o600 });
    expect(() => resolveMasterKey(undefined, short)).toThrow(MasterKeyFileError);
    expect(() => resolveMasterKey(undefined, dir)).toThrow(/not a regular file/);
  });
});
