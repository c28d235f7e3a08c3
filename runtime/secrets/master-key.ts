/**
 * The master key that seals secrets at rest (sealed-text.ts). `authz serve`
 * always has one: AUTHZ_MASTER_KEY when set; otherwise the key file
 * (AUTHZ_MASTER_KEY_FILE, by default `<AUTHZ_DATA_DIR>.master-key`, beside the
 * data directory), generated at the first start: 32 random bytes, base64url,
 * mode 0600 in a directory created 0700. A file readable by others is made
 * 0600 when it is read. Concurrent first starts agree on one key (the file is
 * written aside, then linked into place only if none exists). `authz serve`
 * reads first (readMasterKey) and generates (generateMasterKey) only for a
 * store that holds no sealed secret yet: a lost key is never replaced by a new
 * one that would open nothing.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, linkSync, lstatSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

export class MasterKeyFileError extends Error {}

export interface MasterKey {
  secret: string;
  /** Where it came from: the environment, a key file read, or a key file written now. */
  source: 'env' | 'file' | 'generated';
  /** The key file (source 'file' or 'generated'). */
  path?: string;
}

/** Shortest master key accepted, from the environment or a file. */
export const MASTER_KEY_MIN_LENGTH = 16;

/**
 * The master key: `envKey` when given, else the key file at `file`, made when missing.
 *
 *   const key = resolveMasterKey(config.masterKey, config.masterKeyFile);
 *   if (key.source === 'generated') log(`Generated a master key in ${key.path}`);
 */
export function resolveMasterKey(envKey: string | undefined, file: string): MasterKey {
  return readMasterKey(envKey, file) ?? generateMasterKey(file);
}

/**
 * The master key that exists: `envKey` when given, else the key file at
 * `file`; null when neither is there (nothing is written).
 *
 *   const key = readMasterKey(config.masterKey, config.masterKeyFile) ?? generateMasterKey(config.masterKeyFile);
 */
export function readMasterKey(envKey: string | undefined, file: string): MasterKey | null {
  if (envKey) return { secret: envKey, source: 'env' };
  const existing = readKeyFile(file);
  return existing === null ? null : { secret: existing, source: 'file', path: file };
}

/**
 * Writes a new key file at `file` (source 'generated'), or reads the one a
 * concurrent start linked into place first (source 'file').
 */
export function generateMasterKey(file: string): MasterKey {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const secret = randomBytes(32).toString('base64url');
  const aside = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(aside, `${secret}\n`, { mode: 0o600, flag: 'wx' });
  try {
    chmodSync(aside, 0o600); // whatever the umask
    linkSync(aside, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    // Another process made it first: use that one.
    const theirs = readKeyFile(file);
    if (theirs === null) throw err;
    return { secret: theirs, source: 'file', path: file };
  } finally {
    unlinkSync(aside);
  }
  return { secret, source: 'generated', path: file };
}

/** The key in `file` (trimmed), null when there is no such file; tightens its mode to 0600. */
function readKeyFile(file: string): string | null {
  let stat;
  try {
    stat = lstatSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  if (!stat.isFile()) throw new MasterKeyFileError(`master key file ${file} is not a regular file`);
  if ((stat.mode & 0o077) !== 0) chmodSync(file, 0o600);
  const secret = readFileSync(file, 'utf8').trim();
  if (secret.length < MASTER_KEY_MIN_LENGTH)
    throw new MasterKeyFileError(`master key file ${file} must hold at least ${MASTER_KEY_MIN_LENGTH} characters`);
  return secret;
}
