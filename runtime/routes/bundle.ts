/**
 * /v1/bundle: replace an environment's whole policy set with a compiled bundle
 * (authz compile), atomically; policy.updated fires for each policy that changed.
 * Bundles may be larger than other bodies (BUNDLE_BODY_LIMIT).
 */
import type { FastifyPluginAsync } from 'fastify';
import { loadBundle } from '../../compiler/bundle/load.js';
import { policySetHash } from '../../compiler/bundle/write.js';
import type { Policy } from '../../compiler/policy/types.js';
import { diagnosticsToDetails } from '../domain/policy-sets.js';
import { changeKind } from '../presenters/policy.js';
import { InvalidBundleError, TooManyPoliciesError } from '../errors/api-error.js';
import { eventRow } from '../events/build.js';
import type { EventRow } from '../store/events.js';
import { deleteAllPolicies, loadPolicies, readPolicySetVersion, upsertPolicy } from '../store/policies.js';

export const BUNDLE_BODY_LIMIT = 64 * 1024 * 1024;

export const bundleRoutes: FastifyPluginAsync = async (app) => {
  const { policySets, clock, store, config } = app.services;

  app.put('/v1/bundle', { config: { scope: 'policies:write' }, bodyLimit: BUNDLE_BODY_LIMIT }, async (request) => {
    const p = request.principal;
    const loaded = loadBundle(request.body);
    if (!loaded.ok) {
      const details = diagnosticsToDetails(loaded.problems);
      throw new InvalidBundleError(`invalid bundle: ${details[0]?.message ?? 'unknown problem'}`, { details });
    }
    const next: Policy[] = loaded.bundle.policies;
    if (next.length > config.maxPolicies) {
      throw new TooManyPoliciesError(`the bundle has ${next.length} policies; an environment holds at most ${config.maxPolicies} (AUTHZ_MAX_POLICIES)`);
    }
    const now = clock.now();
    await policySets.change(p.accountId, p.environment, async (tx, current) => {
      const before = new Map(current.map((c) => [c.id, c]));
      const after = new Map(next.map((c) => [c.id, c]));
      const events: EventRow[] = [];
      for (const id of new Set([...before.keys(), ...after.keys()])) {
        const change = changeKind(before.get(id), after.get(id));
        if (change) events.push(eventRow('policy.updated', p.accountId, p.environment, now, { policy: { ...(after.get(id) ?? before.get(id))!, object: 'policy' }, change }));
      }
      await deleteAllPolicies(tx, p.accountId, p.environment);
      for (const policy of next) await upsertPolicy(tx, p.accountId, p.environment, policy, new Date(now));
      return { policies: next, events, value: null };
    });
    return { object: 'bundle', hash: loaded.bundle.hash, policies: next.length };
  });

  app.get('/v1/bundle', { config: { scope: 'policies:read' } }, async (request) => {
    const p = request.principal;
    const version = await readPolicySetVersion(store.sql, p.accountId, p.environment);
    const policies = (await loadPolicies(store.sql, p.accountId, p.environment)).map((r) => r.policy);
    return { object: 'bundle', hash: policySetHash(policies), policies: policies.length, version: version?.version ?? 0 };
  });
};
