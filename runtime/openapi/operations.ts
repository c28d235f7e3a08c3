/**
 * What the route schemas cannot say, per operation of the OpenAPI document: a
 * summary, the success answer's schema, and the request body of routes whose
 * body is checked in code rather than by a route schema (a policy is checked
 * by the compiler so that every problem is reported; a bundle by its loader).
 * Documentation only: adding these as route response schemas would make
 * Fastify serialize with them.
 */
import { listOf, ref } from './components.js';

type Schema = Record<string, unknown>;

export interface OperationDoc {
  summary: string;
  /** Success status and its body schema. */
  success: [number, Schema];
  /** Request body documented here (the route validates it in code). */
  body?: Schema;
  /** The body may be left out (confirm, reject). */
  optionalBody?: true;
  /** The body may also be sent as YAML (application/yaml, text/yaml), of the same shape. */
  yamlBody?: true;
  /** With Accept: application/yaml the answer is this schema as a YAML document. */
  yamlAnswer?: Schema;
}

/** Keyed by `METHOD /path/{param}` as in the document. */
export const OPERATIONS: Record<string, OperationDoc> = {
  'GET /healthz': { summary: 'The process is up', success: [200, ref('Health')] },
  'GET /readyz': { summary: 'The store answers (503 otherwise)', success: [200, ref('Health')] },
  'GET /.well-known/jwks.json': { summary: 'Public keys of permit tokens', success: [200, ref('Jwks')] },

  'POST /v1/decisions': { summary: 'Decide: allow, deny or review', success: [200, ref('Decision')] },
  'POST /v1/decisions/preview': { summary: 'What a decision would be now; stores, holds, signs and fires nothing (extension)', success: [200, ref('DecisionPreview')] },
  'POST /v1/actions/possible': { summary: 'Whether the agent could ever be allowed each action (extension)', success: [200, ref('ActionsPossible')] },
  'GET /v1/decisions': { summary: 'List decisions, newest first', success: [200, listOf('Decision')] },
  'GET /v1/decisions/{id}': {
    summary: 'Read a decision (permit_token is always null here); with wait=SECONDS, held while it awaits approval until its review changes',
    success: [200, ref('Decision')],
  },
  'POST /v1/decisions/{id}/confirm': { summary: 'Confirm a pending decision (optional amount)', success: [200, ref('Decision')], optionalBody: true },
  'POST /v1/decisions/{id}/reject': { summary: 'Reject a pending decision', success: [200, ref('Decision')], optionalBody: true },
  'POST /v1/decisions/{id}/review': {
    summary: "A reviewer's verdict on a review decision: approve or deny one awaiting approval, or record a judgement after the fact (extension; fires decision.reviewed)",
    success: [200, ref('Decision')],
  },
  'POST /v1/decisions/{id}/permit': {
    summary: 'A fresh permit token for a pending allow or review decision, e.g. once approved (extension; 409 decision.awaiting_approval before)',
    success: [200, ref('Permit')],
    optionalBody: true,
  },
  'GET /v1/reviews': { summary: 'Review decisions by review status: open ones oldest first, others newest first (extension)', success: [200, listOf('Decision')] },
  'GET /v1/stats/decisions': { summary: 'Decisions per minute by effect over the last minutes, and the agents and actions denied most (extension)', success: [200, ref('DecisionStats')] },
  'GET /v1/stats/budgets': { summary: 'The budgets of this period nearest their limits (extension)', success: [200, listOf('BudgetNearLimit')] },

  'POST /v1/policies': { summary: 'Create a policy (JSON or YAML body)', success: [201, ref('Policy')], body: ref('PolicyFile_policy'), yamlBody: true },
  'POST /v1/policies/validate': {
    summary: 'Check a policy (JSON or YAML) in this environment as POST or PUT would, storing nothing: errors and warnings',
    success: [200, ref('PolicyValidation')],
    body: ref('PolicyFile_policy'),
    yamlBody: true,
  },
  'GET /v1/policies': { summary: 'List policies', success: [200, listOf('Policy')] },
  'GET /v1/policies/{id}': { summary: 'Read a policy (Accept: application/yaml for the policy as a YAML policy file)', success: [200, ref('Policy')], yamlAnswer: ref('PolicyFile_policy') },
  'PUT /v1/policies/{id}': { summary: 'Replace a policy, state included (JSON or YAML body)', success: [200, ref('Policy')], body: ref('PolicyFile_policy'), yamlBody: true },
  'DELETE /v1/policies/{id}': { summary: 'Delete a policy', success: [200, ref('Deleted')] },

  'PUT /v1/bundle': { summary: "Replace the environment's policies with a compiled bundle", success: [200, ref('BundleStatus')], body: ref('Bundle') },
  'GET /v1/bundle': { summary: "The active set's hash, count and version", success: [200, ref('BundleStatus')] },

  'GET /v1/agents': { summary: 'List agents', success: [200, listOf('Agent')] },
  'GET /v1/agents/{agent_id}': { summary: 'Read an agent', success: [200, ref('Agent')] },
  'POST /v1/agents/{agent_id}/revoke': { summary: 'Revoke an agent (fires agent.revoked)', success: [200, ref('Agent')] },
  'POST /v1/agents/{agent_id}/restore': { summary: 'Restore a revoked agent', success: [200, ref('Agent')] },

  'GET /v1/budgets': { summary: 'Budget usage per (policy, agent) this period', success: [200, listOf('Budget')] },
  'GET /v1/events': { summary: 'List events', success: [200, listOf('Event')] },
  'GET /v1/events/{id}': { summary: 'Read an event', success: [200, ref('Event')] },

  'POST /v1/webhooks': { summary: 'Register a webhook endpoint (the secret is in this answer only)', success: [201, ref('WebhookEndpointWithSecret')] },
  'GET /v1/webhooks': { summary: 'List webhook endpoints', success: [200, listOf('WebhookEndpoint')] },
  'GET /v1/webhooks/{id}': { summary: 'Read a webhook endpoint', success: [200, ref('WebhookEndpoint')] },
  'PUT /v1/webhooks/{id}': { summary: 'Change a webhook endpoint', success: [200, ref('WebhookEndpoint')] },
  'DELETE /v1/webhooks/{id}': { summary: 'Delete a webhook endpoint and its deliveries', success: [200, ref('Deleted')] },
  'GET /v1/webhooks/{id}/deliveries': { summary: "An endpoint's deliveries, newest first", success: [200, listOf('WebhookDelivery')] },
  'POST /v1/webhooks/{id}/deliveries/{delivery_id}/replay': { summary: 'Deliver that event again now (a new delivery)', success: [200, ref('WebhookDelivery')] },

  'POST /access/v1/evaluation': { summary: 'AuthZEN 1.0 access evaluation: one decision', success: [200, ref('AuthzenAnswer')] },
  'POST /access/v1/evaluations': {
    summary: 'AuthZEN 1.0 access evaluations: one decision per entry, in order (without evaluations: one evaluation)',
    success: [200, { oneOf: [ref('AuthzenAnswers'), ref('AuthzenAnswer')] }],
  },
  'GET /.well-known/authzen-configuration': { summary: 'AuthZEN policy decision point metadata', success: [200, ref('AuthzenConfiguration')] },

  'POST /v1/permits/verify': { summary: 'Verify a permit token', success: [200, ref('PermitVerification')] },

  'POST /admin/accounts': { summary: 'Create an account', success: [201, ref('Account')] },
  'POST /admin/accounts/{account_id}/api-keys': { summary: 'Create an API key (the key is in this answer only)', success: [201, ref('ApiKey')] },
  'DELETE /admin/api-keys/{id}': { summary: 'Revoke an API key', success: [200, ref('ApiKeyRevoked')] },
  'POST /admin/api-keys/{id}/rotate': { summary: 'Roll an API key: a new key like it, the old one revoked (the new key is in this answer only)', success: [201, ref('ApiKeyRotated')] },
  'POST /admin/signing-keys/rotate': { summary: 'New permit signing key', success: [200, ref('SigningKeyRotation')] },
  'POST /admin/clock': { summary: 'Move the service clock forward (AUTHZ_TEST_CLOCK=1 only)', success: [200, ref('ClockState')] },

  'GET /metrics': { summary: 'Prometheus metrics (text exposition format)', success: [200, { type: 'string' }] },
};
