/**
 * Reusable schemas of the OpenAPI document (components.schemas): the public
 * resources as the routes build them, the error body, and the project's JSON
 * Schemas for policies and bundles (their `$defs` hoisted into components, as
 * `#/$defs/...` would resolve against the document root). Documentation only:
 * nothing here validates or serializes a request.
 */
import { loadSchema } from '../../compiler/index.js';
import { PERMIT_INVALID_REASONS } from '../domain/permits.js';

type Schema = Record<string, unknown>;

const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const str = (description?: string): Schema => ({ type: 'string', ...(description ? { description } : {}) });
const nullable = (type: string, description?: string): Schema => ({ type: [type, 'null'], ...(description ? { description } : {}) });
const timestamp = (description?: string): Schema => ({ type: 'string', format: 'date-time', ...(description ? { description } : {}) });
const obj = (properties: Record<string, Schema>, required: string[] = Object.keys(properties)): Schema => ({ type: 'object', properties, required });
/** An object whose properties are all required but the `optional` ones. */
const objExcept = (properties: Record<string, Schema>, optional: string[]): Schema => obj(properties, Object.keys(properties).filter((k) => !optional.includes(k)));

/** A `$ref` inside one of the project's schema files, rewritten to its component. */
function rewriteRefs(value: unknown, prefix: string, external: Record<string, string>): unknown {
  if (Array.isArray(value)) return value.map((v) => rewriteRefs(v, prefix, external));
  if (value === null || typeof value !== 'object') return value;
  const out: Schema = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === '$schema' || k === '$id' || k === '$defs') continue;
    if (k === '$ref' && typeof v === 'string') {
      const local = /^#\/\$defs\/(.+)$/.exec(v);
      out[k] = local ? `#/components/schemas/${prefix}_${local[1]}` : (external[v] ?? v);
    } else {
      out[k] = rewriteRefs(v, prefix, external);
    }
  }
  return out;
}

/** A schema file as components: `name` for its root, `name_<def>` for each of its $defs. */
function hoist(file: string, name: string, external: Record<string, string> = {}): Record<string, Schema> {
  const schema = loadSchema(file);
  const out: Record<string, Schema> = { [name]: rewriteRefs(schema, name, external) as Schema };
  for (const [def, body] of Object.entries((schema.$defs ?? {}) as Record<string, unknown>)) out[`${name}_${def}`] = rewriteRefs(body, name, external) as Schema;
  return out;
}

const POLICY_DEF = 'https://agent-authz.dev/schemas/policy.schema.json#/$defs/policy';

const budgetScope = { enum: ['agent', 'session', 'user'], description: 'Whose spend is counted (extension): per agent, per session (agent run), per user (on_behalf_of, across agents).' };

/** A budget as GET /v1/budgets lists it. */
const budget = obj({
  object: { const: 'budget' },
  policy_id: str(),
  agent_id: nullable('string', 'Null for a user-scoped budget (shared by every agent acting for the user).'),
  scope: budgetScope,
  session_id: nullable('string', 'The session of a session-scoped budget (extension).'),
  on_behalf_of: nullable('string', 'The user of a user-scoped budget (extension).'),
  unit: str('ISO 4217 code, tokens or calls'),
  limit: { type: 'number' },
  consumed: { type: 'number' },
  held: { type: 'number' },
  period: { enum: ['hourly', 'daily', 'weekly', 'monthly', 'yearly'] },
  period_start: timestamp(),
  period_resets_at: timestamp(),
  threshold_alert: nullable('number'),
  status: { enum: ['ok', 'threshold', 'exceeded'] },
  livemode: { type: 'boolean' },
});

/** What is left of a budget that would apply (GET /v1/budgets/remaining, extension). */
const budgetRemaining = obj({
  policy_id: str(),
  unit: str('ISO 4217 code, tokens or calls'),
  scope: budgetScope,
  limit: { type: 'number' },
  consumed: { type: 'number' },
  held: { type: 'number' },
  remaining: { type: 'number', description: 'max(0, limit - consumed - held)' },
  period_resets_at: timestamp(),
});

const warning = obj({ code: str('policy.conflict or budget.below_threshold'), message: str(), policy_ids: { type: 'array', items: str() } });

/** An object schema with more properties, all required (and `alsoRequired` of base's): `base` with `more` (no allOf, which cannot close an object). */
function extend(base: Schema, more: Record<string, Schema>, alsoRequired: string[] = []): Schema {
  const required = [...new Set([...((base.required as string[] | undefined) ?? []), ...alsoRequired, ...Object.keys(more)])];
  return { ...base, type: 'object', properties: { ...(base.properties as Record<string, Schema>), ...more }, required };
}

const POLICY_FILE = hoist('policy', 'PolicyFile');

/** The outcome with the shadow policies enabled, when it differs (extension). */
const SHADOW = obj({ effect: { enum: ['allow', 'deny', 'review'] }, reason: str(), policy_id: nullable('string', 'The winner with the shadow policies enabled; null when none.') });

const WEBHOOK_ENDPOINT = obj({
  id: str('we_...'),
  object: { const: 'webhook_endpoint' },
  url: str(),
  events: { type: 'array', items: str() },
  description: nullable('string'),
  status: { enum: ['enabled', 'disabled'] },
  standard_webhooks: { type: 'boolean', description: 'Deliveries also carry webhook-id, webhook-timestamp and webhook-signature (Standard Webhooks)' },
  created_at: timestamp(),
  updated_at: timestamp(),
  livemode: { type: 'boolean' },
});

const API_KEY = obj({
  id: str('key_...'),
  object: { const: 'api_key' },
  key: str('svc_test_sk_... or svc_live_sk_...: shown only in this answer'),
  account_id: str(),
  environment: { enum: ['test', 'live'] },
  scopes: { type: 'array', items: str() },
  created_at: timestamp(),
});

/** An approval (access requests): re-evaluate with it unchanged at context.approval. */
const APPROVAL: Schema = obj({
  id: str('the approved decision (dec_...)'),
  approved_at: nullable('string', 'when the reviewer approved it'),
  approved_until: timestamp('the decision\'s expires_at: the approval is good until then, for one use'),
});

export const COMPONENT_SCHEMAS: Record<string, Schema> = {
  // The policy file schema (a policy or a `policies:` list); the API takes one policy: PolicyFile_policy.
  ...POLICY_FILE,
  ...hoist('bundle', 'Bundle', { [POLICY_DEF]: '#/components/schemas/PolicyFile_policy' }),
  Error: obj({
    error: {
      type: 'object',
      properties: {
        code: str('Machine-readable code (README: Error codes).'),
        message: str('Human-readable description.'),
        request_id: str('req_...: the Request-Id header; quote it to support.'),
        details: {
          type: 'array',
          items: obj(
            {
              path: str('JSON pointer into the input'),
              message: str(),
              line: { type: 'integer', minimum: 1, description: '1-based line, for a policy sent as YAML' },
              column: { type: 'integer', minimum: 1, description: '1-based column, for a policy sent as YAML' },
            },
            ['path', 'message'],
          ),
        },
      },
      required: ['code', 'message', 'request_id'],
    },
  }),
  Decision: objExcept({
    id: str('dec_...'),
    object: { const: 'decision' },
    effect: { enum: ['allow', 'deny', 'review'] },
    reason: str('policy.matched, or a deny reason: policy.not_found, policy.disabled, resource.not_allowed, budget.exceeded, agent.revoked, review.denied, review.timeout'),
    agent_id: str(),
    action: str(),
    resource: nullable('string'),
    amount: nullable('number'),
    policy_id: nullable('string', 'The deciding policy (for budget.exceeded: the budget\'s policy).'),
    status: { enum: ['pending', 'confirmed', 'rejected', 'expired', 'denied', 'awaiting_approval'], description: 'awaiting_approval (extension): a review policy asks for approval first; no permit until approved.' },
    evaluated_at: timestamp(),
    expires_at: timestamp(),
    ttl_seconds: { type: 'integer' },
    permit_token: nullable('string', 'Ed25519 compact JWS for allow and review, only in the POST /v1/decisions answer; null otherwise.'),
    livemode: { type: 'boolean' },
    resolved_at: nullable('string'),
    confirmed_amount: nullable('number'),
    context: { type: ['object', 'null'], description: 'The request\'s context as stored (extension).' },
    session_id: nullable('string', 'The agent run the request belongs to (extension).'),
    on_behalf_of: nullable('string', 'The user the agent acts for (extension).'),
    args_digest: str('base64url SHA-256 of the tool call\'s canonical arguments, when the request gave one (extension).'),
    review: {
      oneOf: [
        { type: 'null' },
        objExcept({
          status: { enum: ['open', 'approved', 'denied'] },
          reviewer: nullable('string', 'Who reviewed (null while open, and for a timeout)'),
          note: nullable('string'),
          reviewed_at: nullable('string', 'When (for a timeout: approval_expires_at)'),
          request_context: { type: 'object', description: 'The context of the AuthZEN access request submitted for it ({} for one without); absent when none was.' },
        }, ['request_context']),
      ],
      description: 'Extension: the review of a decision a review policy decided; null on allow and deny.',
    },
    approval_expires_at: nullable('string', 'Extension: until when the decision waits for approval (null when its policy asks for none).'),
    metadata: objExcept({ matched_policy_ids: { type: 'array', items: str() }, warnings: { type: 'array', items: warning }, shadow: SHADOW }, ['shadow']),
  }, ['args_digest']),
  DecisionPreview: objExcept({
    object: { const: 'decision_preview' },
    effect: { enum: ['allow', 'deny', 'review'] },
    reason: str('As a decision\'s, or rate_limit.exceeded when the decision would be refused with 429.'),
    policy_id: nullable('string'),
    matched_policy_ids: { type: 'array', items: str() },
    warnings: { type: 'array', items: warning },
    shadow: SHADOW,
    retry_after_seconds: { type: 'integer', description: 'With rate_limit.exceeded: the Retry-After the decision would get.' },
  }, ['retry_after_seconds', 'shadow']),
  Permit: obj({ object: { const: 'permit' }, permit_token: nullable('string', 'Ed25519 compact JWS; a fresh one each call') }),
  DecisionStats: obj({
    object: { const: 'decision_stats' },
    minutes: { type: 'integer' },
    since: timestamp('Start of the first minute'),
    until: timestamp('The service clock\'s now'),
    per_minute: { type: 'array', items: obj({ minute: timestamp(), allow: { type: 'integer' }, deny: { type: 'integer' }, review: { type: 'integer' } }), description: 'One entry per minute, oldest first' },
    totals: obj({ allow: { type: 'integer' }, deny: { type: 'integer' }, review: { type: 'integer' } }),
    top_denied_agents: { type: 'array', items: obj({ agent_id: str(), count: { type: 'integer' } }) },
    top_denied_actions: { type: 'array', items: obj({ action: str(), count: { type: 'integer' } }) },
    livemode: { type: 'boolean' },
  }),
  BudgetNearLimit: extend(budget, { used_fraction: { type: 'number', description: '(consumed + held) / limit' } }),
  ActionsPossible: obj({
    object: { const: 'list' },
    data: { type: 'array', items: obj({ action: str(), possible: { type: 'boolean' } }) },
  }),
  // The policy file's fields (which forbid others: an allOf with it could never hold the resource's) and the
  // resource's own; a stored policy always has its id, name, state and priority (defaults filled in).
  Policy: extend(
    POLICY_FILE.PolicyFile_policy!,
    { object: { const: 'policy' }, livemode: { type: 'boolean' }, created_at: timestamp(), updated_at: timestamp() },
    ['id', 'name', 'state', 'priority'],
  ),
  PolicyCreated: extend(
    POLICY_FILE.PolicyFile_policy!,
    {
      object: { const: 'policy' },
      livemode: { type: 'boolean' },
      created_at: timestamp(),
      updated_at: timestamp(),
      warnings: { type: 'array', items: ref('PolicyDiagnostic'), description: 'The lints of the new policy in its environment (lint.conflict, lint.shadowed, ...), as POST /v1/policies/validate reports them; [] when none' },
    },
    ['id', 'name', 'state', 'priority'],
  ),
  PolicyValidation: obj({
    object: { const: 'policy_validation' },
    valid: { type: 'boolean', description: 'No errors (warnings allowed): POST or PUT would accept the policy.' },
    diagnostics: { type: 'array', items: ref('PolicyDiagnostic') },
  }),
  PolicyDiagnostic: obj(
    {
      severity: { enum: ['error', 'warning'] },
      code: str('The compiler\'s code: yaml.syntax, policy.invalid_field, condition.*, policy.duplicate_name, lint.shadowed, lint.conflict, lint.never_matches, ...'),
      message: str(),
      path: str('JSON pointer into the policy'),
      line: { type: 'integer', minimum: 1, description: '1-based, for a YAML body' },
      column: { type: 'integer', minimum: 1, description: '1-based, for a YAML body' },
    },
    ['severity', 'code', 'message', 'path'],
  ),
  Deleted: obj({ id: str(), object: str(), deleted: { const: true } }),
  BundleStatus: {
    type: 'object',
    properties: { object: { const: 'bundle' }, hash: str('sha256:...'), policies: { type: 'integer' }, version: { type: 'integer', description: 'GET only' } },
    required: ['object', 'hash', 'policies'],
  },
  Agent: obj({
    agent_id: str(),
    object: { const: 'agent' },
    status: { enum: ['active', 'revoked'] },
    first_seen_at: timestamp(),
    revoked_at: nullable('string'),
    attributes: { type: 'object', additionalProperties: true, description: 'Set by PUT /v1/agents/{agent_id} (extension); {} when none were' },
    livemode: { type: 'boolean' },
  }),
  Event: obj({
    id: str('evt_...'),
    object: { const: 'event' },
    type: str(),
    created_at: timestamp(),
    account_id: str('acc_...'),
    livemode: { type: 'boolean' },
    data: { type: 'object', additionalProperties: true },
  }),
  Budget: budget,
  BudgetRemaining: budgetRemaining,
  WebhookEndpoint: WEBHOOK_ENDPOINT,
  WebhookEndpointWithSecret: extend(WEBHOOK_ENDPOINT, { secret: str('whsec_ + base64 of 32 random bytes: the signing secret, shown only in this answer') }),
  WebhookDelivery: obj({
    id: str('whd_...'),
    object: { const: 'webhook_delivery' },
    endpoint_id: str(),
    event_id: str(),
    event_type: str(),
    status: { enum: ['pending', 'succeeded', 'abandoned'] },
    attempt: { type: 'integer' },
    status_code: nullable('integer'),
    error: nullable('string'),
    duration_ms: nullable('integer'),
    next_attempt_at: nullable('string'),
    replay_of: nullable('string'),
    created_at: timestamp(),
    attempts: {
      type: 'array',
      items: obj({
        attempt: { type: 'integer' },
        started_at: timestamp(),
        status_code: nullable('integer'),
        error: nullable('string'),
        duration_ms: { type: 'integer' },
        next_attempt_at: nullable('string'),
      }),
    },
  }),
  PermitVerification: {
    type: 'object',
    properties: {
      object: { const: 'permit_verification' },
      valid: { type: 'boolean', description: 'false: well signed and unexpired, but the permit no longer stands (see reason)' },
      reason: { enum: [...PERMIT_INVALID_REASONS], description: 'only when valid is false' },
      claims: { type: 'object', additionalProperties: true },
    },
    required: ['object', 'valid', 'claims'],
  },
  Jwks: obj({ keys: { type: 'array', items: obj({ kty: { const: 'OKP' }, crv: { const: 'Ed25519' }, x: str(), kid: str(), use: { const: 'sig' }, alg: { const: 'EdDSA' } }) } }),
  Account: obj({ id: str('acc_...'), object: { const: 'account' }, name: str(), created_at: timestamp() }),
  Service: obj({
    object: { const: 'service' },
    name: str(),
    version: str(),
    api_reference: str('The API reference page (/docs)'),
    openapi: str('This document (/v1/openapi.json)'),
    dashboard: str('The dashboard, for a browser (/dashboard)'),
    health: str('/healthz'),
  }),
  ApiKey: API_KEY,
  ApiKeyRotated: extend(API_KEY, { replaces: str('key_...: the key this one replaces, now revoked') }),
  ApiKeyRevoked: obj({ id: str(), object: { const: 'api_key' }, revoked: { const: true } }),
  SigningKeyRotation: obj({ object: { const: 'signing_key' }, kid: str(), public_jwk: { type: 'object', additionalProperties: true }, jwks: ref('Jwks') }),
  ClockState: obj({ object: { const: 'clock' }, now: timestamp() }),
  Health: { type: 'object', properties: { status: { enum: ['ok', 'ready'] }, store: { enum: ['postgres', 'embedded'] } }, required: ['status'] },
  AuthzenAnswer: obj({
    decision: { type: 'boolean', description: 'true for allow and review; false for deny (and for a batch entry that failed)' },
    context: {
      oneOf: [
        {
          type: 'object',
          properties: {
            id: str('dec_...: the stored decision (GET /v1/decisions/{id})'),
            effect: { enum: ['allow', 'deny', 'review'] },
            reason: str(),
            permit_token: str('Ed25519 compact JWS for allow and review (absent for deny, and while awaiting approval)'),
            status: { const: 'awaiting_approval', description: 'Extension: the review policy asks for approval first; decision is false until then' },
            evaluation_id: str('A requestable denial (reason approval_required): the decision id, denial.evaluation_id of the access request'),
            access_request: obj({ endpoint: str('POST /access/v1/requests on AUTHZ_BASE_URL'), expires_at: timestamp('the approval deadline') }),
            approval: APPROVAL,
          },
          required: ['id', 'effect', 'reason'],
        },
        obj({ error: obj({ code: str('the error code (docs/errors.md)'), message: str() }) }),
      ],
    },
  }),
  AuthzenAnswers: obj({ evaluations: { type: 'array', items: ref('AuthzenAnswer'), description: 'One answer per entry, in order' } }),
  AuthzenConfiguration: obj({
    policy_decision_point: str('the service base URL (AUTHZ_BASE_URL)'),
    access_evaluation_endpoint: str(),
    access_evaluations_endpoint: str(),
    search_subject_endpoint: str(),
    search_action_endpoint: str(),
    access_request_endpoint: str(),
    capabilities: { type: 'array', items: str(), description: 'urn:openid:authzen:capability:access-request' },
  }),
  AuthzenTask: objExcept({
    task: obj({
      id: str('the decision id (dec_...)'),
      status: { enum: ['pending', 'approved', 'denied', 'expired'], description: 'awaiting approval; approved (whatever followed); denied by a reviewer; not reviewed by the approval deadline' },
      status_endpoint: str('GET /access/v1/requests/{id} on AUTHZ_BASE_URL'),
    }),
    result: obj({ mode: { const: 'reevaluate' }, approval: APPROVAL }),
  }, ['result']),
  AuthzenSubjectSearch: obj({
    results: { type: 'array', items: obj({ type: str('the request\'s subject type'), id: str('an agent_id') }) },
    page: obj({ next_token: str('"" at the end') }),
  }),
  AuthzenActionSearch: obj({
    results: { type: 'array', items: obj({ name: str('the action as written in the policy, e.g. authzen.can_read_todos') }) },
    page: obj({ next_token: str('"" at the end') }),
  }),
};

/** `{ object: 'list', data: [item], has_more, url }` (README: Lists). */
export function listOf(item: string): Schema {
  return obj({ object: { const: 'list' }, data: { type: 'array', items: ref(item) }, has_more: { type: 'boolean' }, url: str() });
}

export { ref };
