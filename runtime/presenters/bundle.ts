/** The public form of an environment's active policy set as a bundle (PUT /v1/bundle, GET /v1/bundle). */
import type { BundleSummary } from '../domain/bundles.js';

/**
 * The set's hash and size; its version when read back (GET).
 *
 * @example
 * bundleResource({ hash: 'sha256:...', policies: 12, version: 3 }); // => { object: 'bundle', hash: 'sha256:...', policies: 12, version: 3 }
 */
export function bundleResource(s: BundleSummary): Record<string, unknown> {
  return {
    object: 'bundle',
    hash: s.hash,
    policies: s.policies,
    ...(s.version === undefined ? {} : { version: s.version }),
  };
}
