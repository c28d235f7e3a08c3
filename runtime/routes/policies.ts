/**
 * /v1/policies: create, replace, read, list, delete, and validate. Bodies are
 * JSON or YAML (application/yaml, text/yaml: read with the compiler's YAML
 * reader, so every problem has its line and column) and are checked by the
 * compiler (every problem in error.details); each change recompiles the
 * environment's table and fires policy.updated in the same transaction.
 * `GET /v1/policies/:id` answers YAML when Accept asks for it.
 */
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { SourceLocator } from '../../compiler/policy/source.js';
import type { Policy } from '../../compiler/policy/types.js';
import type { Principal } from '../tenant.js';
import { changeKind, policyResource, policyYaml } from '../presenters/policy.js';
import { nameClash, validatePolicy } from '../domain/policy-validation.js';
import { PolicyConflictError, PolicyNotFoundError, TooManyPoliciesError } from '../errors/api-error.js';
import { eventRow } from '../events/build.js';
import { listBody, listQuerySchema, pageParams, type ListQuery } from '../http/list.js';
import { invalidPolicyAt, policyFromInput, policyInput, type PolicyInput } from '../http/policy-body.js';
import { isYamlBody, prefersYaml, registerYamlBodies, YAML_CONTENT_TYPE } from '../http/yaml.js';
import { deletePolicy, findPolicy, listPolicies, upsertPolicy } from '../store/policies.js';

const idParams = { type: 'object', properties: { id: { type: 'string', minLength: 1, maxLength: 100 } }, required: ['id'] } as const;

/** The request's body, JSON or YAML. */
const inputOf = (request: FastifyRequest): PolicyInput => policyInput(request.body, isYamlBody(request));

/** Names are unique per environment: a clash is a problem of the body's /name. */
function checkNameFree(current: readonly Policy[], policy: Policy, locator?: SourceLocator): void {
  const clash = nameClash(current, policy, locator);
  if (clash) throw invalidPolicyAt(clash);
}

export const policyRoutes: FastifyPluginAsync = async (app) => {
  const { policySets, clock, store, config } = app.services;
  const sql = store.sql;
  // This plugin's routes only: YAML bodies elsewhere stay 415.
  registerYamlBodies(app);

  const changeEvent = (p: Principal, policy: Policy, change: string, now: number) =>
    eventRow('policy.updated', p.accountId, p.environment, now, { policy: { ...policy, object: 'policy' }, change });

  app.post('/v1/policies', { config: { scope: 'policies:write', yamlBody: true } }, async (request, reply) => {
    const p = request.principal;
    const input = inputOf(request);
    const policy = policyFromInput(input);
    const now = clock.now();
    await policySets.change(p.accountId, p.environment, async (tx, current) => {
      if (current.some((c) => c.id === policy.id)) throw new PolicyConflictError(`a policy with id ${policy.id} already exists; use PUT /v1/policies/${policy.id} to replace it`);
      if (current.length >= config.maxPolicies) {
        throw new TooManyPoliciesError(`this environment already has ${current.length} policies, the most allowed (AUTHZ_MAX_POLICIES=${config.maxPolicies}); delete some first`);
      }
      checkNameFree(current, policy, input.locator);
      await upsertPolicy(tx, p.accountId, p.environment, policy, new Date(now));
      return { policies: [...current, policy], events: [changeEvent(p, policy, 'created', now)], value: null };
    });
    return reply.code(201).send(policyResource(policy, p.environment, new Date(now), new Date(now)));
  });

  app.put<{ Params: { id: string } }>('/v1/policies/:id', { config: { scope: 'policies:write', yamlBody: true }, schema: { params: idParams } }, async (request) => {
    const p = request.principal;
    const input = inputOf(request);
    const policy = policyFromInput(input, request.params.id);
    const now = clock.now();
    const stamps = await policySets.change(p.accountId, p.environment, async (tx, current) => {
      const before = current.find((c) => c.id === policy.id);
      if (!before) throw new PolicyNotFoundError(`no policy ${policy.id}; create it with POST /v1/policies`);
      checkNameFree(current, policy, input.locator);
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

  app.get<{ Params: { id: string } }>('/v1/policies/:id', { config: { scope: 'policies:read' }, schema: { params: idParams } }, async (request, reply) => {
    const p = request.principal;
    const record = await findPolicy(sql, p.accountId, p.environment, request.params.id);
    if (!record) throw new PolicyNotFoundError(`no policy ${request.params.id}`);
    reply.header('vary', 'Accept');
    // Accept: application/yaml (or text/yaml): the policy as in a policy file. Errors stay JSON.
    if (prefersYaml(request.headers.accept)) return reply.type(YAML_CONTENT_TYPE).send(policyYaml(record.policy));
    return policyResource(record.policy, p.environment, record.created_at, record.updated_at);
  });

  // Checks a policy (JSON or YAML) as POST or PUT would, in this environment; stores nothing.
  app.post('/v1/policies/validate', { config: { scope: 'policies:read', yamlBody: true } }, async (request) => {
    const p = request.principal;
    const input = inputOf(request);
    return validatePolicy(await policySets.get(p.accountId, p.environment), input);
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
