/**
 * The signing keys this process uses: the one current signer and every published
 * public key (the JWKS). The first start generates a key (under an advisory lock,
 * so concurrent first starts make one). Rotation retires the signer, which stays
 * in the JWKS until every token it can have signed has expired, and makes a new
 * one; other processes reload on NOTIFY authz_keys (runtime/background/
 * key-replication.ts) and on an unknown kid.
 * With a master key, opening re-seals every private key stored in the clear or
 * in an older envelope (stores written by earlier versions), under the same lock.
 */
import type { KeyObject } from 'node:crypto';
import type { Clock } from '../clock.js';
import { CHANNELS, LOCKS, lockFor, notify } from '../store/channels.js';
import type { Sql, Tx } from '../store/connect.js';
import {
  allSigningKeySecrets,
  countActiveSigningKeys,
  insertSigningKey,
  publishedSigningKeys,
  retireSigningKeys,
  updateSigningKeySecret,
} from '../store/signing-keys.js';
import {
  generateKeyMaterial,
  openPrivateKey,
  resealPrivateKey,
  sealPrivateKey,
  type KeyMaterial,
  type PublicJwk,
} from './key-material.js';

/** Longest token lifetime (ttl_seconds max) plus a minute for clock skew. */
export const RETIRED_KEY_GRACE_SECONDS = 3600 + 60;

interface Published {
  jwk: PublicJwk;
  publicKey: KeyObject;
  expiresAt: number | null;
}

export class KeyRing {
  private signerKey!: KeyMaterial;
  private published = new Map<string, Published>();

  private constructor(
    private readonly sql: Sql,
    private readonly clock: Clock,
    private readonly masterSecret: string | undefined,
  ) {}

  static async open(sql: Sql, clock: Clock, masterSecret: string | undefined): Promise<KeyRing> {
    const ring = new KeyRing(sql, clock, masterSecret);
    await sql.begin(async (tx) => {
      await lockFor(tx, LOCKS.signingKeys);
      await ring.resealStored(tx);
      if ((await countActiveSigningKeys(tx)) === 0) await ring.insertNew(tx);
    });
    await ring.reload();
    return ring;
  }

  /** Seals (again) the private keys stored in the clear or in an older envelope; returns how many. */
  private async resealStored(tx: Tx): Promise<number> {
    let count = 0;
    for (const row of await allSigningKeySecrets(tx)) {
      const sealed = resealPrivateKey(row.private_key, row.encrypted, this.masterSecret);
      if (!sealed) continue;
      await updateSigningKeySecret(tx, row.kid, sealed.text, sealed.encrypted);
      count++;
    }
    return count;
  }

  private async insertNew(tx: Tx): Promise<KeyMaterial> {
    const material = generateKeyMaterial();
    const sealed = sealPrivateKey(material.privateKey, this.masterSecret);
    await insertSigningKey(tx, {
      kid: material.kid,
      public_jwk: { ...material.jwk },
      private_key: sealed.text,
      encrypted: sealed.encrypted,
      created_at: new Date(this.clock.now()),
      retired_at: null,
      expires_at: null,
    });
    return material;
  }

  private lastReload = 0;

  /** Reloads at most once a second (an unknown kid may be a key rotated by another process). */
  async reloadIfStale(): Promise<void> {
    const now = this.clock.now();
    if (now - this.lastReload < 1000) return;
    await this.reload();
  }

  /** Reloads one at a time, in call order: a slow older read never overwrites a newer one. */
  private reloading: Promise<void> = Promise.resolve();

  /**
   * Reads the signing keys again (after a rotation by another process).
   *
   * @example
   * await ring.reload(); // ring.signer().kid is now the store's current signer
   */
  reload(): Promise<void> {
    const next = this.reloading.catch(() => {}).then(() => this.load());
    this.reloading = next;
    return next;
  }

  private async load(): Promise<void> {
    this.lastReload = this.clock.now();
    const rows = await publishedSigningKeys(this.sql, new Date(this.clock.now()));
    const published = new Map<string, Published>();
    let signer: KeyMaterial | undefined;
    for (const row of rows) {
      const material = openPrivateKey(row.private_key, row.encrypted, this.masterSecret);
      if (row.retired_at === null && !signer) signer = material;
      published.set(row.kid, {
        jwk: material.jwk,
        publicKey: material.publicKey,
        expiresAt: row.expires_at?.getTime() ?? null,
      });
    }
    if (!signer) throw new Error('no current signing key in the store');
    this.signerKey = signer;
    this.published = published;
  }

  /** Retires the current signer and starts signing with a new key; returns its public JWK. */
  async rotate(): Promise<PublicJwk> {
    const now = this.clock.now();
    const material = await this.sql.begin(async (tx) => {
      await lockFor(tx, LOCKS.signingKeys);
      await retireSigningKeys(tx, new Date(now), new Date(now + RETIRED_KEY_GRACE_SECONDS * 1000));
      const made = await this.insertNew(tx);
      await notify(tx, CHANNELS.keys, made.kid);
      return made;
    });
    await this.reload();
    return material.jwk;
  }

  signer(): KeyMaterial {
    return this.signerKey;
  }

  /** The public key of a published kid (null when unknown or past its publication). */
  publicKey(kid: string): KeyObject | null {
    const entry = this.published.get(kid);
    if (!entry || (entry.expiresAt !== null && entry.expiresAt <= this.clock.now())) return null;
    return entry.publicKey;
  }

  jwks(): { keys: PublicJwk[] } {
    const now = this.clock.now();
    return {
      keys: [...this.published.values()].filter((p) => p.expiresAt === null || p.expiresAt > now).map((p) => p.jwk),
    };
  }

  /** Whether the stored keys are sealed with AUTHZ_MASTER_KEY. */
  get encrypted(): boolean {
    return this.masterSecret !== undefined;
  }
}
