/**
 * What the route schemas cannot say, per operation of the OpenAPI document: a
 * summary, the success answer's schema, and the request body of routes whose
 * body is checked in code rather than by a route schema (a policy is checked
 * by the compiler so that every problem is reported; a bundle by its loader).
 * Documentation only: adding these as route response schemas would make
 * Fastify serialize with them.
 */
import { ref } from './components.js';

/** A search's page token (docs/api.md#post-accessv1searchsubject-and-accessv1searchaction). */
const SEARCH_TOKEN =
  'page.next_token of the preceding answer; the request with it repeats that search unchanged (another search, context or limit: 400 validation.invalid_field)';

type Schema = Record<string, unknown>;

export interface OperationDoc {
  summary: string;
  /** Success status and its body schema. */
  success: [number, Schema];
  /** Another success status answering the same schema, and when (a repeat's 200 beside a creation's 201). */
  alsoSuccess?: [number, string];
  /** Request body documented here (the route validates it in code). */
  body?: Schema;
  /** The body may be left out (confirm, reject). */
  optionalBody?: true;
  /** The body may also be sent as YAML (application/yaml, text/yaml), of the same shape. */
  yamlBody?: true;
  /** With Accept: application/yaml the answer is this schema as a YAML document. */
  yamlAnswer?: Schema;
  /** The answer is application/x-ndjson: one document of the success schema per line. */
  ndjsonAnswer?: true;
  /** Error statuses beyond those its parameters, body and credentials imply (runtime/openapi/errors.ts), or their own codes. */
  errors?: Partial<Record<number, string>>;
}

const YAML_415 = 'validation.unsupported_media_type: send the body as application/json or application/yaml (text/yaml)';
const notFound = (code: string) => `${code}: the id names nothing here (another account's or environment's alike)`;

/** Keyed by `METHOD /path/{param}` as in the document. */
export const OPERATIONS: Record<string, OperationDoc> = {
  'GET /': {
    summary:
      "Where to go: a browser (Accept: text/html) is redirected to /dashboard (302); other clients get the API reference's address",
    success: [200, ref('Service')],
  },
  'GET /healthz': { summary: 'The process is up', success: [200, ref('Health')] },
  'GET /readyz': {
    summary: 'The store answers (503 otherwise)',
    success: [200, ref('Health')],
    errors: { 503: 'service.unavailable: the store is not reachable' },
  },
  'GET /.well-known/jwks.json': { summary: 'Public keys of permit tokens', success: [200, ref('Jwks')] },

  'POST /v1/decisions': { summary: 'Decide: allow, deny or review', success: [200, ref('Decision')] },
  'POST /v1/decisions/preview': {
    summary: 'What a decision would be now; stores, holds, signs and fires nothing (extension)',
    success: [200, ref('DecisionPreview')],
  },
  'POST /v1/actions/possible': {
    summary: 'Whether the agent could ever be allowed each action (extension)',
    success: [200, ref('ActionsPossible')],
  },
  'GET /v1/decisions/export': {
    summary:
      'Every decision with since <= evaluated_at < until, oldest first, one decision body per line (application/x-ndjson), streamed (extension)',
    success: [200, ref('Decision')],
    ndjsonAnswer: true,
  },
  'GET /v1/decisions': { summary: 'List decisions, newest first', success: [200, ref('DecisionList')] },
  'GET /v1/decisions/{id}': {
    summary:
      'Read a decision (permit_token is always null here); with wait=SECONDS, held while it awaits approval until its review changes',
    success: [200, ref('Decision')],
    errors: {
      404: notFound('decision.not_found'),
      429: "rate_limit.exceeded: the key's platform limit, or it holds 100 long polls (wait=) already; Retry-After",
    },
  },
  'POST /v1/decisions/{id}/confirm': {
    summary: 'Confirm a pending decision (optional amount)',
    success: [200, ref('Decision')],
    optionalBody: true,
    errors: {
      404: notFound('decision.not_found'),
      409: 'decision.already_confirmed, decision.not_pending; idempotency.in_progress',
      410: 'decision.expired: past its TTL',
    },
  },
  'POST /v1/decisions/{id}/reject': {
    summary: 'Reject a pending decision',
    success: [200, ref('Decision')],
    optionalBody: true,
    errors: {
      404: notFound('decision.not_found'),
      409: 'decision.not_pending; idempotency.in_progress',
      410: 'decision.expired: past its TTL',
    },
  },
  'POST /v1/decisions/{id}/output': {
    summary:
      "Record what the MCP gateway read in the result of the request this decision allowed: its labels (added to the decision's session, source gateway) and findings, never the matched text; once (extension)",
    success: [200, ref('Decision')],
    errors: {
      404: notFound('decision.not_found'),
      409: "decision.output_recorded (recorded already: once per decision), session.too_many_labels (the labels would take the decision's session past 256); idempotency.in_progress",
    },
  },
  'POST /v1/decisions/{id}/review': {
    summary:
      "A reviewer's verdict on a review decision: approve or deny one awaiting approval, or record a judgement after the fact (extension; fires decision.reviewed)",
    success: [200, ref('Decision')],
    errors: {
      403: 'review.self_review: the key that made the decision, or a key of its rotation chain, cannot review it; auth.scope_insufficient',
      404: notFound('decision.not_found'),
      409: 'decision.not_reviewable (not a review decision), decision.already_reviewed; idempotency.in_progress',
    },
  },
  'POST /v1/decisions/{id}/permit': {
    summary: 'A fresh permit token for a pending allow or review decision, e.g. once approved (extension)',
    success: [200, ref('Permit')],
    optionalBody: true,
    errors: {
      404: notFound('decision.not_found'),
      409: 'decision.awaiting_approval (not approved yet), decision.not_pending (denied, rejected or confirmed); idempotency.in_progress',
      410: 'decision.expired: past its TTL',
    },
  },
  'GET /v1/reviews': {
    summary: 'Review decisions by review status: open ones oldest first, others newest first (extension)',
    success: [200, ref('DecisionList')],
  },
  'GET /v1/stats/decisions': {
    summary: 'Decisions per minute by effect over the last minutes, and the agents and actions denied most (extension)',
    success: [200, ref('DecisionStats')],
  },
  'GET /v1/stats/budgets': {
    summary: 'The budgets of this period nearest their limits (extension)',
    success: [200, ref('BudgetNearLimitList')],
  },

  'POST /v1/policies': {
    summary: 'Create a policy (JSON or YAML body); its lints in the environment answered as warnings',
    success: [201, ref('PolicyCreated')],
    body: ref('PolicyFile_policy'),
    yamlBody: true,
    errors: { 409: 'policy.already_exists; idempotency.in_progress', 415: YAML_415 },
  },
  'POST /v1/policies/validate': {
    summary:
      'Check a policy (JSON or YAML) in this environment as POST or PUT would, storing nothing: errors and warnings',
    success: [200, ref('PolicyValidation')],
    body: ref('PolicyFile_policy'),
    yamlBody: true,
    errors: { 415: YAML_415 },
  },
  'GET /v1/policies': { summary: 'List policies', success: [200, ref('PolicyList')] },
  'GET /v1/policies/{id}': {
    summary: 'Read a policy (Accept: application/yaml for the policy as a YAML policy file)',
    success: [200, ref('Policy')],
    yamlAnswer: ref('PolicyFile_policy'),
    errors: { 404: notFound('policy.not_found') },
  },
  'PUT /v1/policies/{id}': {
    summary: 'Replace a policy, state included (JSON or YAML body)',
    success: [200, ref('Policy')],
    body: ref('PolicyFile_policy'),
    yamlBody: true,
    errors: { 404: notFound('policy.not_found'), 415: YAML_415 },
  },
  'DELETE /v1/policies/{id}': {
    summary: 'Delete a policy',
    success: [200, ref('Deleted')],
    errors: { 404: notFound('policy.not_found'), 415: YAML_415 },
  },

  'PUT /v1/bundle': {
    summary: "Replace the environment's policies with a compiled bundle",
    success: [200, ref('BundleStatus')],
    body: ref('Bundle'),
  },
  'GET /v1/bundle': { summary: "The active set's hash, count and version", success: [200, ref('BundleStatus')] },

  'GET /v1/agents': { summary: 'List agents', success: [200, ref('AgentList')] },
  'GET /v1/agents/{agent_id}': {
    summary: 'Read an agent',
    success: [200, ref('Agent')],
    errors: { 404: notFound('agent.not_found') },
  },
  'PUT /v1/agents/{agent_id}': {
    summary:
      "Replace an agent's attributes, read by conditions as agent.attributes.… (extension); an unseen agent becomes known (fires agent.registered)",
    success: [200, ref('Agent')],
    errors: { 413: 'validation.body_too_large: the body is over 1 MiB, or the attributes over 8,192 bytes of JSON' },
  },
  'POST /v1/agents/{agent_id}/revoke': {
    summary: 'Revoke an agent (fires agent.revoked); no body or {}',
    success: [200, ref('Agent')],
    optionalBody: true,
    errors: { 404: notFound('agent.not_found') },
  },
  'POST /v1/agents/{agent_id}/restore': {
    summary: 'Restore a revoked agent; no body or {}',
    success: [200, ref('Agent')],
    optionalBody: true,
    errors: { 404: notFound('agent.not_found') },
  },

  'GET /v1/sessions/{session_id}': {
    summary: "A session's labels (what it has read), its decisions and its last decision's time (extension)",
    success: [200, ref('Session')],
    errors: {
      404: 'session.not_found: no decision or label named this session, or it ended after AUTHZ_SESSION_IDLE_HOURS without one',
    },
  },
  'POST /v1/sessions/{session_id}/labels': {
    summary: 'Add labels to a session (source api; a session exists from its first decision or label) (extension)',
    success: [200, ref('Session')],
    errors: { 409: 'session.too_many_labels: the session would hold more than 256 labels; nothing was added' },
  },

  'GET /v1/budgets': {
    summary: 'Budget usage per (policy, agent), (policy, agent, session) or (policy, user) this period',
    success: [200, ref('BudgetList')],
  },
  'GET /v1/budgets/remaining': {
    summary: 'What is left this period of each budget that would apply to the agent, session and user (extension)',
    success: [200, ref('BudgetRemainingList')],
  },
  'GET /v1/events': { summary: 'List events', success: [200, ref('EventList')] },
  'GET /v1/events/{id}': {
    summary: 'Read an event',
    success: [200, ref('Event')],
    errors: { 404: notFound('event.not_found') },
  },

  'POST /v1/webhooks': {
    summary: 'Register a webhook endpoint (the secret is in this answer only)',
    success: [201, ref('WebhookEndpointWithSecret')],
  },
  'GET /v1/webhooks': { summary: 'List webhook endpoints', success: [200, ref('WebhookEndpointList')] },
  'GET /v1/webhooks/{id}': {
    summary: 'Read a webhook endpoint',
    success: [200, ref('WebhookEndpoint')],
    errors: { 404: notFound('webhook.not_found') },
  },
  'PUT /v1/webhooks/{id}': {
    summary: 'Change a webhook endpoint',
    success: [200, ref('WebhookEndpoint')],
    errors: { 404: notFound('webhook.not_found') },
  },
  'DELETE /v1/webhooks/{id}': {
    summary: 'Delete a webhook endpoint and its deliveries',
    success: [200, ref('Deleted')],
    errors: { 404: notFound('webhook.not_found') },
  },
  'GET /v1/webhooks/{id}/deliveries': {
    summary: "An endpoint's deliveries, newest first",
    success: [200, ref('WebhookDeliveryList')],
    errors: { 404: notFound('webhook.not_found') },
  },
  'POST /v1/webhooks/{id}/deliveries/{delivery_id}/replay': {
    summary: 'Deliver that event again now (a new delivery)',
    success: [200, ref('WebhookDelivery')],
    errors: { 404: 'webhook.not_found, or delivery.not_found for a delivery not of that endpoint' },
  },

  'POST /access/v1/evaluation': {
    summary: 'AuthZEN 1.0 access evaluation: one decision',
    success: [200, ref('AuthzenAnswer')],
  },
  'POST /access/v1/evaluations': {
    summary: 'AuthZEN 1.0 access evaluations: one decision per entry, in order (without evaluations: one evaluation)',
    success: [200, { oneOf: [ref('AuthzenAnswers'), ref('AuthzenAnswer')] }],
  },
  'POST /access/v1/search/subject': {
    summary:
      'AuthZEN 1.0 subject search: the known, not revoked agents the action on the resource would be allowed now (nothing stored, no limit used)',
    success: [200, ref('AuthzenSubjectSearch')],
    body: {
      type: 'object',
      required: ['subject', 'action', 'resource'],
      properties: {
        subject: { type: 'object', required: ['type'], properties: { type: { type: 'string' } } },
        action: {
          type: 'object',
          required: ['name'],
          properties: { name: { type: 'string' }, properties: { type: 'object' } },
        },
        resource: {
          type: 'object',
          required: ['type', 'id'],
          properties: { type: { type: 'string' }, id: { type: 'string' }, properties: { type: 'object' } },
        },
        context: { type: 'object' },
        page: {
          type: 'object',
          properties: {
            limit: { type: 'integer', minimum: 1, maximum: 100 },
            token: { type: 'string', description: SEARCH_TOKEN },
          },
        },
      },
    },
  },
  'POST /access/v1/search/action': {
    summary:
      'AuthZEN 1.0 action search: the actions named by enabled allow and review policies the subject would be allowed on the resource now',
    success: [200, ref('AuthzenActionSearch')],
    body: {
      type: 'object',
      required: ['subject', 'resource'],
      properties: {
        subject: {
          type: 'object',
          required: ['type', 'id'],
          properties: { type: { type: 'string' }, id: { type: 'string' }, properties: { type: 'object' } },
        },
        resource: {
          type: 'object',
          required: ['type', 'id'],
          properties: { type: { type: 'string' }, id: { type: 'string' }, properties: { type: 'object' } },
        },
        context: { type: 'object' },
        page: {
          type: 'object',
          properties: {
            limit: { type: 'integer', minimum: 1, maximum: 100 },
            token: { type: 'string', description: SEARCH_TOKEN },
          },
        },
      },
    },
  },
  'POST /access/v1/requests': {
    summary:
      'AuthZEN access request (Access Request and Approval profile, draft) for a requestable denial: a decision of this key awaiting approval; the task is the decision',
    success: [201, ref('AuthzenTask')],
    alsoSuccess: [200, 'A repeat: the same task, as it is now'],
    errors: {
      404: notFound('decision.not_found') + "; another API key's decision alike",
      409: 'decision.not_reviewable: the decision never awaited approval',
      410: 'decision.expired: past the approval deadline (the service clock; denial.expires_at is not trusted)',
    },
  },
  'GET /access/v1/requests/{id}': {
    summary:
      "An access request's task status: pending, approved (with the approval to re-evaluate with), denied or expired",
    success: [200, ref('AuthzenTask')],
    errors: { 404: notFound('decision.not_found') + '; a decision no access request was submitted for alike' },
  },
  'GET /.well-known/authzen-configuration': {
    summary: 'AuthZEN policy decision point metadata',
    success: [200, ref('AuthzenConfiguration')],
  },

  'POST /v1/permits/verify': {
    summary: 'Verify a permit token',
    success: [200, ref('PermitVerification')],
    errors: { 401: 'auth.invalid_key (the API key); auth.expired or auth.signature_invalid (the permit token)' },
  },

  'GET /admin/accounts': {
    summary: 'The accounts of one name (?name=), oldest first',
    success: [200, ref('AccountList')],
  },
  'POST /admin/accounts': { summary: 'Create an account', success: [201, ref('Account')] },
  'POST /admin/accounts/{account_id}/api-keys': {
    summary: 'Create an API key (the key is in this answer only)',
    success: [201, ref('ApiKey')],
    errors: { 404: 'account.not_found' },
  },
  'DELETE /admin/api-keys/{id}': {
    summary: 'Revoke an API key',
    success: [200, ref('ApiKeyRevoked')],
    errors: { 404: 'api_key.not_found' },
  },
  'POST /admin/api-keys/{id}/rotate': {
    summary: 'Roll an API key: a new key like it, the old one revoked (the new key is in this answer only)',
    success: [201, ref('ApiKeyRotated')],
    errors: { 404: 'api_key.not_found' },
  },
  'POST /admin/signing-keys/rotate': { summary: 'New permit signing key', success: [200, ref('SigningKeyRotation')] },
  'POST /admin/clock': {
    summary: 'Move the service clock forward (AUTHZ_TEST_CLOCK=1 only)',
    success: [200, ref('ClockState')],
  },

  'GET /metrics': { summary: 'Prometheus metrics (text exposition format)', success: [200, { type: 'string' }] },
};
