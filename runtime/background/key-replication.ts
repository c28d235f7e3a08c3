/**
 * Keeping the keys of several server processes on one PostgreSQL in step, as
 * runtime/background/policy-refresh.ts does for policy sets and agent statuses:
 *
 * - an API key revoked or rolled by any process (`NOTIFY authz_api_keys`, its
 *   id) is dropped from this process's key cache, so its next request is 401;
 * - a signing-key rotation by any process (`NOTIFY authz_keys`, the new kid)
 *   reloads this process's key ring, so it signs with the new key and
 *   publishes it in its JWKS.
 *
 * A notification missed during a reconnect is covered by the key cache's
 * lifetime (5 s) and by the ring's reload on an unknown kid. The embedded store
 * has no LISTEN and serves one process, which applies its own changes at once.
 */
import type { ApiKeyCache } from '../auth/key-cache.js';
import type { KeyRing } from '../permits/key-ring.js';
import { CHANNELS } from '../store/channels.js';
import type { Store } from '../store/connect.js';
import { startTask, type Stoppable } from './task.js';

export interface ReplicatedKeys {
  apiKeys: ApiKeyCache;
  ring: KeyRing;
}

/**
 * LISTENs for key revocations and signing-key rotations (PostgreSQL; nothing to
 * do on the embedded store); `stop()` ends it.
 *
 * @example
 * const keyReplication = await startKeyReplication(store, { apiKeys: services.apiKeys, ring: services.ring });
 * // ... on shutdown:
 * await keyReplication.stop();
 */
export function startKeyReplication(
  store: Store,
  keys: ReplicatedKeys,
  onError: (e: unknown) => void = () => {},
): Promise<Stoppable> {
  return startTask(store, {
    listens: [
      {
        channel: CHANNELS.apiKeys,
        onPayload: (keyId) => {
          if (keyId) keys.apiKeys.forget(keyId);
        },
      },
      { channel: CHANNELS.keys, onPayload: () => void keys.ring.reload().catch(onError) },
    ],
    onError,
  });
}
