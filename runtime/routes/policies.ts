/**
 * /v1/policies: create, replace, read, list, delete, and validate. Bodies are
 * JSON or YAML (application/yaml, text/yaml: read with the compiler's YAML
 * reader, so every problem has its line and column); the rules live in
 * domain/policies.ts. `GET /v1/policies/:id` answers YAML when Accept asks for it.
 */
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { policyInput, type PolicyInput } from '../domain/policy-input.js';
import { listQuerySchema, pageParams, type ListQuery } from '../http/list.js';
import { isYamlBody, prefersYaml, registerYamlBodies, YAML_CONTENT_TYPE } from '../http/yaml.js';
import { listBody } from '../presenters/list.js';
import { createdPolicyResource, deletedPolicyResource, policyResource, policyYaml } from '../presenters/policy.js';
import { policyValidationResource } from '../presenters/policy-validation.js';
import { idParams } from '../http/params.js';

// No minLength: an empty id (what fetch or a browser sends for the id `.`, resolving dot segments) is the resource's 404 like any unknown id.

/** The request's body, JSON or YAML. */
const inputOf = (request: FastifyRequest): PolicyInput => policyInput(request.body, isYamlBody(request));

export const policyRoutes: FastifyPluginAsync = async (app) => {
  const { policies } = app.services;
  // This plugin's routes only: YAML bodies elsewhere stay 415.
  registerYamlBodies(app);

  app.post('/v1/policies', { config: { scope: 'policies:write' } }, async (request, reply) => {
    const p = request.principal;
    const stored = await policies.create(p, inputOf(request));
    // The lints of the new policy in its environment, as POST /v1/policies/validate reports them ([] when none).
    return reply
      .code(201)
      .send(createdPolicyResource(stored.policy, p.environment, stored.created_at, stored.warnings));
  });

  app.put<{ Params: { id: string } }>(
    '/v1/policies/:id',
    { config: { scope: 'policies:write' }, schema: { params: idParams } },
    async (request) => {
      const p = request.principal;
      const stored = await policies.replace(p, request.params.id, inputOf(request));
      return policyResource(stored.policy, p.environment, stored.created_at, stored.updated_at);
    },
  );

  app.get<{ Querystring: ListQuery }>(
    '/v1/policies',
    { config: { scope: 'policies:read' }, schema: { querystring: listQuerySchema } },
    async (request) => {
      const p = request.principal;
      const page = await policies.list(p, pageParams(request.query));
      return listBody(
        page.data.map((r) => policyResource(r.policy, p.environment, r.created_at, r.updated_at)),
        page.has_more,
        '/v1/policies',
      );
    },
  );

  app.get<{ Params: { id: string } }>(
    '/v1/policies/:id',
    { config: { scope: 'policies:read' }, schema: { params: idParams } },
    async (request, reply) => {
      const p = request.principal;
      const record = await policies.get(p, request.params.id);
      reply.header('vary', 'Accept');
      // Accept: application/yaml (or text/yaml): the policy as in a policy file. Errors stay JSON.
      if (prefersYaml(request.headers.accept)) return reply.type(YAML_CONTENT_TYPE).send(policyYaml(record.policy));
      return policyResource(record.policy, p.environment, record.created_at, record.updated_at);
    },
  );

  // Checks a policy (JSON or YAML) as POST or PUT would, in this environment; stores nothing.
  app.post('/v1/policies/validate', { config: { scope: 'policies:read' } }, async (request) =>
    policyValidationResource(await policies.validate(request.principal, inputOf(request))),
  );

  app.delete<{ Params: { id: string } }>(
    '/v1/policies/:id',
    { config: { scope: 'policies:write' }, schema: { params: idParams } },
    async (request) => {
      const removed = await policies.delete(request.principal, request.params.id);
      return deletedPolicyResource(removed.id);
    },
  );
};
