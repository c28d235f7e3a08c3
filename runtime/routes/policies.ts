/**
 * /v1/policies: create, replace, read, list, delete. Bodies are checked by the
 * compiler (every problem in error.details); each change recompiles the
 * environment's table and fires policy.updated in the same transaction.
 */
import type { FastifyPluginAsync } from 'fastify';
import { canonicalPolicy } from '../../compiler/policy/normalize.js';
import { readPolicyValue } from '../../compiler/policy/read.js';
import type { Policy } from '../../compiler/policy/types.js';
import type { Principal } from '../auth/authenticate.js';
import { diagnosticsToDetails } from '../engine/policy-sets.js';
import { changeKind, policyResource } from '../engine/policy-resource.js';
import { InvalidPolicyError, PolicyConflictError, PolicyNotFoundError, TooManyPoliciesError, type ErrorDetail } from '../errors/api-error.js';
import { eventRow } from '../events/event-row.js';
import { listBody, listQuerySchema, pageParams, type ListQuery } from '../http/list.js';
import { newId } from '../ids.js';
import { deletePolicy, findPolicy, listPolicies, upsertPolicy } from '../store/policies.js';

const idParams = { type: 'object', properties: { id: { type: 'string', minLength: 1, maxLength: 100 } }, required: ['id'] } as const;

/** Validates a policy body with the compiler; every problem becomes a detail. */
export function policyFromBody(body: unknown, id?: string): Policy {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new InvalidPolicyError('the body must be a JSON object describing a policy', { details: [{ path: '/', message: 'must be a JSON object describing a policy' }] });
  }
  const value = { ...(body as Record<string, unknown>) };
  const details: ErrorDetail[] = [];
  if (id !== undefined) {
    if (value.id !== undefined && value.id !== id) {
      details.push({ path: '/id', message: `the body's id ${JSON.stringify(value.id)} differs from the path's ${id}; it must equal the id in the path` });
    }
    value.id = id;
  }
  // The API generates an opaque id when none is given (ids derived from the name are for files).
  if (value.id === undefined) value.id = newId('pol');
  const r = readPolicyValue(value, '');
  details.push(...diagnosticsToDetails(r.diagnostics));
  if (r.items.length === 0 || details.length > 0) {
    throw new InvalidPolicyError(`invalid policy: ${details[0]?.message ?? 'unknown problem'}`, { details });
  }
  return canonicalPolicy(r.items[0]!.policy);
}

/** Names are unique per environment: a clash is a problem of the body's /name. */
function checkNameFree(current: readonly Policy[], policy: Policy): void {
  const holder = current.find((c) => c.id !== policy.id && c.name === policy.name);
  if (holder) {
    const message = `duplicate policy name "${policy.name}" (policy ${holder.id} has it); names are unique per environment`;
    throw new InvalidPolicyError(`invalid policy: ${message}`, { details: [{ path: '/name', message }] });
  }
}

export const policyRoutes: FastifyPluginAsync = async (app) => {
  const { policySets, clock, store, config } = app.services;
  const sql = store.sql;

  const changeEvent = (p: Principal, policy: Policy, change: string, now: number) =>
    eventRow('policy.updated', p.accountId, p.environment, now, { policy: { ...policy, object: 'policy' }, change });

  app.post('/v1/policies', { config: { scope: 'policies:write' } }, async (request, reply) => {
    const p = request.principal;
    const policy = policyFromBody(request.body);
    const now = clock.now();
    await policySets.change(p.accountId, p.environment, async (tx, current) => {
      if (current.some((c) => c.id === policy.id)) throw new PolicyConflictError(`a policy with id ${policy.id} already exists; use PUT /v1/policies/${policy.id} to replace it`);
      if (current.length >= config.maxPolicies) {
        throw new TooManyPoliciesError(`this environment already has ${current.length} policies, the most allowed (AUTHZ_MAX_POLICIES=${config.maxPolicies}); delete some first`);
      }
      checkNameFree(current, policy);
      await upsertPolicy(tx, p.accountId, p.environment, policy, new Date(now));
      return { policies: [...current, policy], events: [changeEvent(p, policy, 'created', now)], value: null };
    });
    return reply.code(201).send(policyResource(policy, p.environment, new Date(now), new Date(now)));
  });

  app.put<{ Params: { id: string } }>('/v1/policies/:id', { config: { scope: 'policies:write' }, schema: { params: idParams } }, async (request) => {
    const p = request.principal;
    const policy = policyFromBody(request.body, request.params.id);
    const now = clock.now();
    const stamps = await policySets.change(p.accountId, p.environment, async (tx, current) => {
      const before = current.find((c) => c.id === policy.id);
      if (!before) throw new PolicyNotFoundError(`no policy ${policy.id}; create it with POST /v1/policies`);
      checkNameFree(current, policy);
      const change = changeKind(before, policy);
      const record = await findPolicy(tx, p.accountId, p.environment, policy.id);
      if (change) await upsertPolicy(tx, p.accountId, p.environment, policy, new Date(now));
      return {
        policies: current.map((c) => (c.id === policy.id ? policy : c)),
        events: change ? [changeEvent(p, policy, change, now)] : [],
        // Unchanged: the stored updated_at stays, so the answer matches a later GET.
        value: { created: record!.created_at, updated: change ? new Date(now) : record!.updated_at },
      };
    });
    return policyResource(policy, p.environment, stamps.created, stamps.updated);
  });

  app.get<{ Querystring: ListQuery }>('/v1/policies', { config: { scope: 'policies:read' }, schema: { querystring: listQuerySchema } }, async (request) => {
    const p = request.principal;
    const page = await listPolicies(sql, p.accountId, p.environment, pageParams(request.query));
    return listBody(page.data.map((r) => policyResource(r.policy, p.environment, r.created_at, r.updated_at)), page.has_more, '/v1/policies');
  });

  app.get<{ Params: { id: string } }>('/v1/policies/:id', { config: { scope: 'policies:read' }, schema: { params: idParams } }, async (request) => {
    const p = request.principal;
    const record = await findPolicy(sql, p.accountId, p.environment, request.params.id);
    if (!record) throw new PolicyNotFoundError(`no policy ${request.params.id}`);
    return policyResource(record.policy, p.environment, record.created_at, record.updated_at);
  });

  app.delete<{ Params: { id: string } }>('/v1/policies/:id', { config: { scope: 'policies:write' }, schema: { params: idParams } }, async (request) => {
    const p = request.principal;
    const now = clock.now();
    const id = request.params.id;
    const removed = await policySets.change(p.accountId, p.environment, async (tx, current) => {
      const before = current.find((c) => c.id === id);
      if (!before || !(await deletePolicy(tx, p.accountId, p.environment, id))) throw new PolicyNotFoundError(`no policy ${id}`);
      return { policies: current.filter((c) => c.id !== id), events: [changeEvent(p, before, 'deleted', now)], value: before };
    });
    return { id: removed.id, object: 'policy', deleted: true };
  });
};
