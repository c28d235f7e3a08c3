/* eslint-disable */
/**
 * The public answers and requests of the service (its wire types), GENERATED
 * from schemas/api/answers/*.schema.json (and schemas/policy.schema.json,
 * schemas/bundle.schema.json) and schemas/api/*.schema.json by
 * scripts/gen-wire-types.ts. Do not edit: change the schema and run
 * `npm run gen:types`. Answers: one type per OpenAPI component
 * (GET /v1/openapi.json), named as the component (but Error: ErrorBody).
 * Requests: one type per body or query schema, named for its file
 * (decision-request: DecisionRequest, session-labels: SessionLabelsRequest,
 * budget-remaining-query: BudgetRemainingQuery). The runtime's routes, domain
 * and presenters, the TypeScript client and the dashboard import them from here.
 */

export interface Account {
  /**
   * acc_...
   */
  id: string;
  object: 'account';
  name: string;
  created_at: string;
}
export interface AccountList {
  object: 'list';
  data: Account[];
  has_more: boolean;
  url: string;
}
export interface ActionsPossible {
  object: 'list';
  data: {
    action: string;
    possible: boolean;
  }[];
}
export interface Agent {
  agent_id: string;
  object: 'agent';
  status: 'active' | 'revoked';
  first_seen_at: string;
  revoked_at: string | null;
  /**
   * Set by PUT /v1/agents/{agent_id} (extension); {} when none were
   */
  attributes: {
    [k: string]: unknown;
  };
  livemode: boolean;
}
export interface AgentList {
  object: 'list';
  data: Agent[];
  has_more: boolean;
  url: string;
}
export interface ApiKey {
  /**
   * key_...
   */
  id: string;
  object: 'api_key';
  /**
   * svc_test_sk_... or svc_live_sk_...: shown only in this answer
   */
  key: string;
  account_id: string;
  environment: 'test' | 'live';
  scopes: string[];
  created_at: string;
}
export interface ApiKeyRevoked {
  id: string;
  object: 'api_key';
  revoked: true;
}
export interface ApiKeyRotated {
  /**
   * key_...
   */
  id: string;
  object: 'api_key';
  /**
   * svc_test_sk_... or svc_live_sk_...: shown only in this answer
   */
  key: string;
  account_id: string;
  environment: 'test' | 'live';
  scopes: string[];
  created_at: string;
  /**
   * key_...: the key this one replaces, now revoked
   */
  replaces: string;
}
export interface AuthzenActionSearch {
  results: {
    /**
     * the action as written in the policy, e.g. authzen.can_read_todos
     */
    name: string;
  }[];
  page: {
    /**
     * "" at the end
     */
    next_token: string;
  };
}
export interface AuthzenAnswer {
  /**
   * true for allow and review; false for deny (and for a batch entry that failed)
   */
  decision: boolean;
  context:
    | {
        /**
         * dec_...: the stored decision (GET /v1/decisions/{id})
         */
        id: string;
        effect: 'allow' | 'deny' | 'review';
        reason: string;
        /**
         * Ed25519 compact JWS for allow and review (absent for deny, and while awaiting approval)
         */
        permit_token?: string;
        /**
         * Extension: the review policy asks for approval first; decision is false until then
         */
        status?: 'awaiting_approval';
        /**
         * A requestable denial (reason approval_required): the decision id, denial.evaluation_id of the access request
         */
        evaluation_id?: string;
        access_request?: {
          /**
           * POST /access/v1/requests on AUTHZ_BASE_URL
           */
          endpoint: string;
          /**
           * the approval deadline
           */
          expires_at: string;
        };
        approval?: AuthzenApproval;
      }
    | {
        error: {
          /**
           * the error code (docs/errors.md)
           */
          code: string;
          message: string;
        };
      };
}
/**
 * An approval (access requests): the approved decision, when, and until when it may be used once.
 */
export interface AuthzenApproval {
  /**
   * the approved decision (dec_...)
   */
  id: string;
  /**
   * when the reviewer approved it
   */
  approved_at: string | null;
  /**
   * the decision's expires_at: the approval is good until then, for one use
   */
  approved_until: string;
}
export interface AuthzenAnswers {
  /**
   * One answer per entry, in order
   */
  evaluations: AuthzenAnswer[];
}
export interface AuthzenConfiguration {
  /**
   * the service base URL (AUTHZ_BASE_URL)
   */
  policy_decision_point: string;
  access_evaluation_endpoint: string;
  access_evaluations_endpoint: string;
  search_subject_endpoint: string;
  search_action_endpoint: string;
  access_request_endpoint: string;
  /**
   * urn:openid:authzen:capability:access-request
   */
  capabilities: string[];
}
export interface AuthzenSubjectSearch {
  results: {
    /**
     * the request's subject type
     */
    type: string;
    /**
     * an agent_id
     */
    id: string;
  }[];
  page: {
    /**
     * "" at the end
     */
    next_token: string;
  };
}
export interface AuthzenTask {
  task: {
    /**
     * the decision id (dec_...)
     */
    id: string;
    /**
     * awaiting approval; approved (whatever followed); denied by a reviewer; not reviewed by the approval deadline
     */
    status: 'pending' | 'approved' | 'denied' | 'expired';
    /**
     * GET /access/v1/requests/{id} on AUTHZ_BASE_URL
     */
    status_endpoint: string;
  };
  result?: {
    mode: 'reevaluate';
    approval: AuthzenApproval;
  };
}
export interface Budget {
  object: 'budget';
  policy_id: string;
  /**
   * Null for a user-scoped budget (shared by every agent acting for the user).
   */
  agent_id: string | null;
  /**
   * Whose spend is counted (extension): per agent, per session (agent run), per user (on_behalf_of, across agents).
   */
  scope: 'agent' | 'session' | 'user';
  /**
   * The session of a session-scoped budget (extension).
   */
  session_id: string | null;
  /**
   * The user of a user-scoped budget (extension).
   */
  on_behalf_of: string | null;
  /**
   * ISO 4217 code, tokens or calls
   */
  unit: string;
  limit: number;
  consumed: number;
  held: number;
  period: 'hourly' | 'daily' | 'weekly' | 'monthly' | 'yearly';
  period_start: string;
  period_resets_at: string;
  threshold_alert: number | null;
  status: 'ok' | 'threshold' | 'exceeded';
  livemode: boolean;
}
export interface BudgetList {
  object: 'list';
  data: Budget[];
  has_more: boolean;
  url: string;
}
export interface BudgetNearLimit {
  object: 'budget';
  policy_id: string;
  /**
   * Null for a user-scoped budget (shared by every agent acting for the user).
   */
  agent_id: string | null;
  /**
   * Whose spend is counted (extension): per agent, per session (agent run), per user (on_behalf_of, across agents).
   */
  scope: 'agent' | 'session' | 'user';
  /**
   * The session of a session-scoped budget (extension).
   */
  session_id: string | null;
  /**
   * The user of a user-scoped budget (extension).
   */
  on_behalf_of: string | null;
  /**
   * ISO 4217 code, tokens or calls
   */
  unit: string;
  limit: number;
  consumed: number;
  held: number;
  period: 'hourly' | 'daily' | 'weekly' | 'monthly' | 'yearly';
  period_start: string;
  period_resets_at: string;
  threshold_alert: number | null;
  status: 'ok' | 'threshold' | 'exceeded';
  livemode: boolean;
  /**
   * (consumed + held) / limit
   */
  used_fraction: number;
}
export interface BudgetNearLimitList {
  object: 'list';
  data: BudgetNearLimit[];
  has_more: boolean;
  url: string;
}
export interface BudgetRemaining {
  policy_id: string;
  /**
   * ISO 4217 code, tokens or calls
   */
  unit: string;
  /**
   * Whose spend is counted (extension): per agent, per session (agent run), per user (on_behalf_of, across agents).
   */
  scope: 'agent' | 'session' | 'user';
  limit: number;
  consumed: number;
  held: number;
  /**
   * max(0, limit - consumed - held)
   */
  remaining: number;
  period_resets_at: string;
}
export interface BudgetRemainingList {
  object: 'list';
  data: BudgetRemaining[];
}
export interface BundleStatus {
  object: 'bundle';
  /**
   * sha256:...
   */
  hash: string;
  policies: number;
  /**
   * GET only
   */
  version?: number;
}
export interface ClockState {
  object: 'clock';
  now: string;
}
export interface Decision {
  /**
   * dec_...
   */
  id: string;
  object: 'decision';
  effect: 'allow' | 'deny' | 'review';
  /**
   * policy.matched, or a deny reason: policy.not_found, policy.disabled, resource.not_allowed, budget.exceeded, agent.revoked, review.denied, review.timeout
   */
  reason: string;
  agent_id: string;
  action: string;
  resource: string | null;
  amount: number | null;
  /**
   * The deciding policy (for budget.exceeded: the budget's policy).
   */
  policy_id: string | null;
  /**
   * awaiting_approval (extension): a review policy asks for approval first; no permit until approved.
   */
  status: 'pending' | 'confirmed' | 'rejected' | 'expired' | 'denied' | 'awaiting_approval';
  evaluated_at: string;
  expires_at: string;
  ttl_seconds: number;
  /**
   * Ed25519 compact JWS for allow and review, only in the POST /v1/decisions answer; null otherwise.
   */
  permit_token: string | null;
  livemode: boolean;
  resolved_at: string | null;
  confirmed_amount: number | null;
  /**
   * The request's context as stored (extension).
   */
  context: {
    [k: string]: unknown;
  } | null;
  /**
   * The agent run the request belongs to (extension).
   */
  session_id: string | null;
  /**
   * The user the agent acts for (extension).
   */
  on_behalf_of: string | null;
  /**
   * base64url SHA-256 of the tool call's canonical arguments, when the request gave one (extension).
   */
  args_digest?: string;
  /**
   * Extension: the review of a decision a review policy decided; null on allow and deny.
   */
  review: null | Review;
  /**
   * Extension: until when the decision waits for approval (null when its policy asks for none).
   */
  approval_expires_at: string | null;
  /**
   * Extension: what the MCP gateway read in the result of the request this decision allowed (POST /v1/decisions/:id/output): its labels and findings, never the matched text; null until recorded.
   */
  output: null | DecisionOutput;
  metadata: {
    matched_policy_ids: string[];
    warnings: DecisionWarning[];
    shadow?: DecisionShadow;
    /**
     * (extension) The session's labels the decision was decided with: present when one of its candidate policies reads session.labels or adds labels
     */
    session_labels?: string[];
    /**
     * Extension: every history value a candidate policy read (the winner's and the others', shadow ones included); absent when none reads history.
     */
    history?: DecisionHistoryValue[];
  };
}
/**
 * A decision's review (extension): the reviewer's verdict on a decision a review policy decided.
 */
export interface Review {
  status: 'open' | 'approved' | 'denied';
  /**
   * Who reviewed (null while open, and for a timeout)
   */
  reviewer: string | null;
  note: string | null;
  /**
   * When (for a timeout: approval_expires_at)
   */
  reviewed_at: string | null;
  /**
   * The context of the AuthZEN access request submitted for it ({} for one without); absent when none was.
   */
  request_context?: {
    [k: string]: unknown;
  };
}
/**
 * What the MCP gateway read in the result of the request this decision allowed (extension; POST /v1/decisions/:id/output): recorded once.
 */
export interface DecisionOutput {
  /**
   * The labels the result carried (added to the decision's session, source gateway).
   */
  labels: string[];
  findings: DecisionOutputFinding[];
  recorded_at: string;
}
/**
 * What one detector rule found in a result, and what the gateway did (extension): never the matched text.
 */
export interface DecisionOutputFinding {
  /**
   * The detector's label (secret, pii), or skipped for content that was not read (a binary blob, an image).
   */
  kind: string;
  /**
   * What matched: aws-access-key, github-token, email, phone, card, iban...; for skipped, the content's type (image, audio, blob).
   */
  rule: string;
  /**
   * How many matches.
   */
  count: number;
  /**
   * What the gateway did: labelled the result, redacted the matches, blocked the result, or did not read the content.
   */
  action: 'label' | 'redact' | 'block' | 'skipped';
}
/**
 * An entry of a decision's metadata.warnings (policy.conflict, budget.below_threshold, environment.no_policies).
 */
export interface DecisionWarning {
  /**
   * policy.conflict, budget.below_threshold or environment.no_policies (the environment has no policy at all: every request is denied)
   */
  code: string;
  message: string;
  policy_ids: string[];
}
/**
 * The outcome with the shadow policies enabled, when it differs (extension).
 */
export interface DecisionShadow {
  effect: 'allow' | 'deny' | 'review';
  reason: string;
  /**
   * The winner with the shadow policies enabled; null when none.
   */
  policy_id: string | null;
}
/**
 * A history value a candidate policy of the decision read (extension, docs/history.md): the function, its arguments as written, and its value for this request.
 */
export interface DecisionHistoryValue {
  fn: 'count' | 'sum' | 'exists' | 'denied';
  /**
   * The action patterns, sorted.
   */
  actions: string[];
  /**
   * As written: <n>s|m|h|d.
   */
  window: string;
  scope: 'session' | 'agent' | 'user' | 'environment';
  /**
   * The MATCH fields, when the function has any.
   */
  match?: string[];
  /**
   * A count (count, exists, denied) or a sum (sum).
   */
  value: number;
}
export interface DecisionList {
  object: 'list';
  data: Decision[];
  has_more: boolean;
  url: string;
}
export interface DecisionPreview {
  object: 'decision_preview';
  effect: 'allow' | 'deny' | 'review';
  /**
   * As a decision's, or rate_limit.exceeded when the decision would be refused with 429.
   */
  reason: string;
  policy_id: string | null;
  matched_policy_ids: string[];
  warnings: DecisionWarning[];
  shadow?: DecisionShadow;
  /**
   * With rate_limit.exceeded: the Retry-After the decision would get.
   */
  retry_after_seconds?: number;
  /**
   * Extension: every history value a candidate policy read (the winner's and the others', shadow ones included); absent when none reads history.
   */
  history?: DecisionHistoryValue[];
}
export interface DecisionStats {
  object: 'decision_stats';
  minutes: number;
  /**
   * Start of the first minute
   */
  since: string;
  /**
   * The service clock's now
   */
  until: string;
  /**
   * One entry per minute, oldest first
   */
  per_minute: {
    minute: string;
    allow: number;
    deny: number;
    review: number;
  }[];
  totals: {
    allow: number;
    deny: number;
    review: number;
  };
  top_denied_agents: {
    agent_id: string;
    count: number;
  }[];
  top_denied_actions: {
    action: string;
    count: number;
  }[];
  livemode: boolean;
}
export interface Deleted {
  id: string;
  object: string;
  deleted: true;
}
export interface ErrorBody {
  error: {
    /**
     * Machine-readable code (README: Error codes).
     */
    code: string;
    /**
     * Human-readable description.
     */
    message: string;
    /**
     * req_...: the Request-Id header; quote it to support.
     */
    request_id: string;
    details?: {
      /**
       * JSON pointer into the input
       */
      path: string;
      message: string;
      /**
       * 1-based line, for a policy sent as YAML
       */
      line?: number;
      /**
       * 1-based column, for a policy sent as YAML
       */
      column?: number;
    }[];
  };
}
export interface Event {
  /**
   * evt_...
   */
  id: string;
  object: 'event';
  type: string;
  created_at: string;
  /**
   * acc_...
   */
  account_id: string;
  livemode: boolean;
  data: {
    [k: string]: unknown;
  };
}
export interface EventList {
  object: 'list';
  data: Event[];
  has_more: boolean;
  url: string;
}
export interface Health {
  status: 'ok' | 'ready';
  store?: 'postgres' | 'embedded';
}
export interface Jwks {
  keys: {
    kty: 'OKP';
    crv: 'Ed25519';
    x: string;
    kid: string;
    use: 'sig';
    alg: 'EdDSA';
  }[];
}
export interface List {
  object: 'list';
  data: unknown[];
  has_more: boolean;
  url: string;
}
export interface Permit {
  object: 'permit';
  /**
   * Ed25519 compact JWS; a fresh one each call
   */
  permit_token: string | null;
}
export interface PermitVerification {
  object: 'permit_verification';
  /**
   * false: well signed and unexpired, but the permit no longer stands (see reason)
   */
  valid: boolean;
  /**
   * only when valid is false
   */
  reason?: 'decision.not_found' | 'decision.rejected' | 'agent.revoked' | 'policy.not_found' | 'policy.disabled';
  claims: {
    [k: string]: unknown;
  };
}
/**
 * A policy: which agents may do which actions on which resources, with an effect, a priority and optional condition, rate limit and budget.
 */
export interface Policy {
  /**
   * Unique id within an environment. In files it defaults to pol_ + the name with other characters replaced by _.
   */
  id: string;
  /**
   * Unique human-readable name (kebab-case by convention).
   */
  name: string;
  description?: string;
  /**
   * A disabled policy is treated as non-existent by decisions (reason policy.disabled when it alone would have matched). A shadow policy does not exist for enforcement either (it never makes a decision policy.disabled), but decisions also report what they would be with the shadow policies enabled (metadata.shadow, when that differs).
   */
  state: 'enabled' | 'disabled' | 'shadow';
  /**
   * Lower number wins when matching policies disagree; at equal priority deny beats review beats allow.
   */
  priority: number;
  /**
   * review = allowed but flagged for human review.
   */
  effect: 'allow' | 'deny' | 'review';
  /**
   * Agent id globs this policy applies to; omitted = every agent.
   *
   * @minItems 1
   * @maxItems 1000
   *
   * Items: agent_id glob; * matches any run of characters.
   */
  agents?: string[];
  /**
   * Action patterns: namespace.verb, with * alone or as either part.
   *
   * @minItems 1
   * @maxItems 1000
   */
  actions: string[];
  /**
   * Resource globs; omitted = any resource. A policy with resources does not match a request without one.
   *
   * @minItems 1
   * @maxItems 1000
   *
   * Items: Resource glob; * matches any run of characters.
   */
  resources?: string[];
  /**
   * Expression over agent_id, action, resource, amount, session_id, on_behalf_of, context.*, agent.attributes.* (the agent's stored attributes), session.labels and the history of earlier decisions (history.count|sum|exists|denied(actions, window[, scope[, match]])), with + - * / on numbers; e.g. amount <= 50 && context.channel == 'chat', history.sum('shop.buy', '1d', 'user') + amount <= 100.
   */
  condition?: string;
  rate_limit?: PolicyRateLimit;
  budget?: PolicyBudget;
  approval?: PolicyApproval;
  /**
   * Allow and review policies (extension): labels that join the session (session_id) when a decision this policy wins is allowed (a review: approved); conditions read them as session.labels. On a deny policy they have no effect (a lint).
   *
   * @minItems 1
   * @maxItems 32
   *
   * Items: What a session has read (private, untrusted, secret, pii, external, ...).
   */
  labels?: string[];
  object: 'policy';
  livemode: boolean;
  created_at: string;
  updated_at: string;
}
/**
 * Most requests allowed per agent in each window; every matching policy's limits apply.
 */
export interface PolicyRateLimit {
  per_second?: number;
  per_minute?: number;
  per_hour?: number;
  per_day?: number;
}
/**
 * Spend allowed per period, per agent (scope agent, the default), per agent run (scope session) or per user (scope user): a fiat budget (ISO 4217 unit) holds the request's amount, a tokens budget its tokens (both consumed on confirm); a calls budget consumes 1 per allowed decision.
 */
export interface PolicyBudget {
  unit: string;
  /**
   * Whose spend is counted (extension; absent = agent): agent (per policy and agent), session (per policy, agent and the request's session_id) or user (per policy and the request's on_behalf_of, across every agent acting for that user).
   */
  scope?: 'agent' | 'session' | 'user';
  limit: number;
  period: 'hourly' | 'daily' | 'weekly' | 'monthly' | 'yearly';
  /**
   * Fraction of the limit (0.8 = 80%) at which budget.threshold fires.
   */
  threshold_alert?: number;
}
/**
 * Review policies only (extension): a decision this policy wins awaits a human's approval (status awaiting_approval, no permit) until approved, denied, or timeout_seconds pass without an answer (then denied, reason review.timeout).
 */
export interface PolicyApproval {
  /**
   * true: the decision waits for approval; false: the review happens after the fact, as without this field.
   */
  required: boolean;
  /**
   * Seconds a decision waits for a reviewer before it is denied (review.timeout).
   */
  timeout_seconds?: number;
}
/**
 * A policy: which agents may do which actions on which resources, with an effect, a priority and optional condition, rate limit and budget.
 */
export interface PolicyCreated {
  /**
   * Unique id within an environment. In files it defaults to pol_ + the name with other characters replaced by _.
   */
  id: string;
  /**
   * Unique human-readable name (kebab-case by convention).
   */
  name: string;
  description?: string;
  /**
   * A disabled policy is treated as non-existent by decisions (reason policy.disabled when it alone would have matched). A shadow policy does not exist for enforcement either (it never makes a decision policy.disabled), but decisions also report what they would be with the shadow policies enabled (metadata.shadow, when that differs).
   */
  state: 'enabled' | 'disabled' | 'shadow';
  /**
   * Lower number wins when matching policies disagree; at equal priority deny beats review beats allow.
   */
  priority: number;
  /**
   * review = allowed but flagged for human review.
   */
  effect: 'allow' | 'deny' | 'review';
  /**
   * Agent id globs this policy applies to; omitted = every agent.
   *
   * @minItems 1
   * @maxItems 1000
   *
   * Items: agent_id glob; * matches any run of characters.
   */
  agents?: string[];
  /**
   * Action patterns: namespace.verb, with * alone or as either part.
   *
   * @minItems 1
   * @maxItems 1000
   */
  actions: string[];
  /**
   * Resource globs; omitted = any resource. A policy with resources does not match a request without one.
   *
   * @minItems 1
   * @maxItems 1000
   *
   * Items: Resource glob; * matches any run of characters.
   */
  resources?: string[];
  /**
   * Expression over agent_id, action, resource, amount, session_id, on_behalf_of, context.*, agent.attributes.* (the agent's stored attributes), session.labels and the history of earlier decisions (history.count|sum|exists|denied(actions, window[, scope[, match]])), with + - * / on numbers; e.g. amount <= 50 && context.channel == 'chat', history.sum('shop.buy', '1d', 'user') + amount <= 100.
   */
  condition?: string;
  rate_limit?: PolicyRateLimit;
  budget?: PolicyBudget;
  approval?: PolicyApproval;
  /**
   * Allow and review policies (extension): labels that join the session (session_id) when a decision this policy wins is allowed (a review: approved); conditions read them as session.labels. On a deny policy they have no effect (a lint).
   *
   * @minItems 1
   * @maxItems 32
   *
   * Items: What a session has read (private, untrusted, secret, pii, external, ...).
   */
  labels?: string[];
  object: 'policy';
  livemode: boolean;
  created_at: string;
  updated_at: string;
  /**
   * The lints of the new policy in its environment (lint.conflict, lint.shadowed, ...), as POST /v1/policies/validate reports them; [] when none
   */
  warnings: PolicyDiagnostic[];
}
export interface PolicyDiagnostic {
  severity: 'error' | 'warning';
  /**
   * The compiler's code: yaml.syntax, policy.invalid_field, condition.*, policy.duplicate_name, lint.shadowed, lint.conflict, lint.never_matches, ...
   */
  code: string;
  message: string;
  /**
   * JSON pointer into the policy
   */
  path: string;
  /**
   * 1-based, for a YAML body
   */
  line?: number;
  /**
   * 1-based, for a YAML body
   */
  column?: number;
}
export interface PolicyList {
  object: 'list';
  data: Policy[];
  has_more: boolean;
  url: string;
}
export interface PolicyValidation {
  object: 'policy_validation';
  /**
   * No errors (warnings allowed): POST or PUT would accept the policy.
   */
  valid: boolean;
  diagnostics: PolicyDiagnostic[];
}
export interface Service {
  object: 'service';
  name: string;
  version: string;
  /**
   * The API reference page (/docs)
   */
  api_reference: string;
  /**
   * This document (/v1/openapi.json)
   */
  openapi: string;
  /**
   * The dashboard, for a browser (/dashboard)
   */
  dashboard: string;
  /**
   * /healthz
   */
  health: string;
}
/**
 * A session (extension: labels): what an agent run (session_id) has read, from its first decision or label until AUTHZ_SESSION_IDLE_HOURS without one
 */
export interface Session {
  object: 'session';
  /**
   * The session_id
   */
  id: string;
  /**
   * In the order they were added; at most 256
   */
  labels: SessionLabel[];
  /**
   * Decisions of the session since it started
   */
  decisions: number;
  last_decision_at: string | null;
}
export interface SessionLabel {
  label: string;
  added_at: string;
  /**
   * policy: a winning policy's labels (decision_id names the decision); api: POST /v1/sessions/{session_id}/labels; gateway: the MCP gateway's output (decision_id names the decision whose result it read)
   */
  source: 'policy' | 'api' | 'gateway';
  /**
   * Present for labels a decision added (source policy or gateway)
   */
  decision_id?: string;
  /**
   * Present when the call that added it gave one
   */
  detail?: string;
}
export interface SigningKeyRotation {
  object: 'signing_key';
  kid: string;
  public_jwk: {
    [k: string]: unknown;
  };
  jwks: Jwks;
}
export interface WebhookDelivery {
  /**
   * whd_...
   */
  id: string;
  object: 'webhook_delivery';
  endpoint_id: string;
  event_id: string;
  event_type: string;
  status: 'pending' | 'succeeded' | 'abandoned';
  attempt: number;
  status_code: number | null;
  error: string | null;
  duration_ms: number | null;
  next_attempt_at: string | null;
  replay_of: string | null;
  created_at: string;
  attempts: {
    attempt: number;
    started_at: string;
    status_code: number | null;
    error: string | null;
    duration_ms: number;
    next_attempt_at: string | null;
  }[];
}
export interface WebhookDeliveryList {
  object: 'list';
  data: WebhookDelivery[];
  has_more: boolean;
  url: string;
}
export interface WebhookEndpoint {
  /**
   * we_...
   */
  id: string;
  object: 'webhook_endpoint';
  url: string;
  events: string[];
  description: string | null;
  status: 'enabled' | 'disabled';
  /**
   * Deliveries also carry webhook-id, webhook-timestamp and webhook-signature (Standard Webhooks)
   */
  standard_webhooks: boolean;
  created_at: string;
  updated_at: string;
  livemode: boolean;
}
export interface WebhookEndpointList {
  object: 'list';
  data: WebhookEndpoint[];
  has_more: boolean;
  url: string;
}
export interface WebhookEndpointWithSecret {
  /**
   * we_...
   */
  id: string;
  object: 'webhook_endpoint';
  url: string;
  events: string[];
  description: string | null;
  status: 'enabled' | 'disabled';
  /**
   * Deliveries also carry webhook-id, webhook-timestamp and webhook-signature (Standard Webhooks)
   */
  standard_webhooks: boolean;
  created_at: string;
  updated_at: string;
  livemode: boolean;
  /**
   * whsec_ + base64 of 32 random bytes: the signing secret, shown only in this answer
   */
  secret: string;
}
/**
 * Which of these actions this agent could ever be allowed (extension).
 */
export interface ActionsPossibleRequest {
  agent_id: string;
  /**
   * @minItems 1
   * @maxItems 1000
   */
  actions: string[];
}
export interface AgentUpdateRequest {
  /**
   * The agent's attributes, replacing those stored: any JSON object of at most 8,192 bytes (UTF-8 JSON; 413 validation.body_too_large above). Read by policy conditions as agent.attributes.…
   */
  attributes: {
    [k: string]: unknown;
  };
}
/**
 * Members the profile defines and this service does not use (subject, action, resource, requested_access, callback, ...) and members no one defines are ignored.
 */
export interface AuthzenAccessRequest {
  /**
   * The requestable denial, as the evaluation answered it.
   */
  denial: {
    /**
     * context.evaluation_id of the denial: the decision awaiting approval (dec_...), made by this API key.
     */
    evaluation_id: string;
    /**
     * context.access_request.expires_at of the denial; not trusted: the service's clock and the decision's approval deadline decide (410 decision.expired after it).
     */
    expires_at?: string;
    /**
     * context.reason of the denial (approval_required).
     */
    reason?: string;
    [k: string]: unknown;
  };
  /**
   * Why the access is requested (a justification, a ticket): stored as the decision's review.request_context for the reviewers.
   */
  context?: {
    [k: string]: unknown;
  } | null;
  [k: string]: unknown;
}
/**
 * Members not defined by AuthZEN are ignored at every level.
 */
export interface AuthzenEvaluationRequest {
  /**
   * Who asks: subject.id is the decision's agent_id.
   */
  subject: {
    /**
     * The subject's type (e.g. agent); not part of the decision.
     */
    type: string;
    /**
     * The decision's agent_id.
     */
    id: string;
    /**
     * Read by conditions as context.subject.*.
     */
    properties?: {
      [k: string]: unknown;
    };
    [k: string]: unknown;
  };
  /**
   * What it wants to do: action.name is the decision's action.
   */
  action: {
    /**
     * The decision's action: the name itself when it is namespace.verb ([a-z][a-z0-9_]* each part), else authzen.<name> (lower-cased, every character outside [a-z0-9_] replaced by _, t_ in front when it does not start with a letter). At most 200 characters (400 validation.invalid_action). Conditions read it as context.action.name.
     */
    name: string;
    /**
     * Read by conditions as context.action.* (with name, the name as sent).
     */
    properties?: {
      [k: string]: unknown;
    };
    [k: string]: unknown;
  };
  /**
   * On what: the decision's resource is "<type>:<id>".
   */
  resource: {
    /**
     * The decision's resource is "<type>:<id>" (at most 1024 characters).
     */
    type: string;
    id: string;
    /**
     * Read by conditions as context.resource.*.
     */
    properties?: {
      [k: string]: unknown;
    };
    [k: string]: unknown;
  };
  /**
   * Read by conditions as context.*; context.amount (a number >= 0) is the decision's amount.
   */
  context?: {
    [k: string]: unknown;
  };
  /**
   * Accepted and ignored.
   */
  options?: {
    [k: string]: unknown;
  };
  [k: string]: unknown;
}
/**
 * The top-level subject, action, resource and context are defaults for each entry of evaluations (an entry's own key replaces the default whole). Each entry is checked on its own: a bad entry answers decision false with context.error, the others are still decided. Without evaluations the request is a single evaluation. Members not defined by AuthZEN are ignored at every level.
 */
export interface AuthzenEvaluationsRequest {
  /**
   * Default subject of the entries.
   */
  subject?: {
    /**
     * The subject's type (e.g. agent); not part of the decision.
     */
    type: string;
    /**
     * The decision's agent_id.
     */
    id: string;
    /**
     * Read by conditions as context.subject.*.
     */
    properties?: {
      [k: string]: unknown;
    };
    [k: string]: unknown;
  };
  /**
   * Default action of the entries.
   */
  action?: {
    /**
     * The decision's action: the name itself when it is namespace.verb ([a-z][a-z0-9_]* each part), else authzen.<name> (lower-cased, every character outside [a-z0-9_] replaced by _, t_ in front when it does not start with a letter). At most 200 characters (400 validation.invalid_action). Conditions read it as context.action.name.
     */
    name: string;
    /**
     * Read by conditions as context.action.* (with name, the name as sent).
     */
    properties?: {
      [k: string]: unknown;
    };
    [k: string]: unknown;
  };
  /**
   * Default resource of the entries.
   */
  resource?: {
    /**
     * The decision's resource is "<type>:<id>" (at most 1024 characters).
     */
    type: string;
    id: string;
    /**
     * Read by conditions as context.resource.*.
     */
    properties?: {
      [k: string]: unknown;
    };
    [k: string]: unknown;
  };
  /**
   * Default context of the entries.
   */
  context?: {
    [k: string]: unknown;
  };
  /**
   * options.evaluations_semantic: execute_all (default), deny_on_first_deny or permit_on_first_permit (another value: 400 validation.invalid_field). Other options are ignored.
   */
  options?: {
    evaluations_semantic?: 'execute_all' | 'deny_on_first_deny' | 'permit_on_first_permit';
    [k: string]: unknown;
  };
  /**
   * Up to 100 evaluations, decided in order: each an object with subject, action, resource and context (each optional where a default applies). An empty array is one evaluation of the top-level request, answered in the single form.
   *
   * @maxItems 100
   *
   * Items: An evaluation: subject, action, resource, context, each optional where a default applies. Checked on its own: a bad entry (even one that is not an object) answers decision false with context.error.
   */
  evaluations?: {
    [k: string]: unknown;
  }[];
  [k: string]: unknown;
}
export interface BudgetListQuery {
  limit?: number;
  /**
   * The cursor of the last item of the previous page: <policy_id>:<agent_id>, <policy_id>:<agent_id>:<session_id> or <policy_id>::<on_behalf_of>.
   */
  starting_after?: string;
  /**
   * Only this agent's budgets (agent- and session-scoped), with its unused ones.
   */
  agent_id?: string;
  /**
   * Only this session's budgets (session-scoped; extension).
   */
  session_id?: string;
  /**
   * Only this user's budgets (user-scoped; extension).
   */
  on_behalf_of?: string;
}
export interface BudgetRemainingQuery {
  /**
   * The agent whose budgets would apply.
   */
  agent_id: string;
  /**
   * Its session: session-scoped budgets are answered only with one.
   */
  session_id?: string;
  /**
   * The user it acts for: user-scoped budgets are answered only with one.
   */
  on_behalf_of?: string;
}
/**
 * Every decision with since <= evaluated_at < until (until defaults to the service's current time).
 */
export interface DecisionExportQuery {
  /**
   * ISO 8601 time, inclusive.
   */
  since: string;
  /**
   * ISO 8601 time, exclusive; default now.
   */
  until?: string;
}
export interface DecisionGetQuery {
  /**
   * Extension: hold the answer up to this many seconds while the decision awaits approval; it comes as soon as the review changes (at once when the decision is not awaiting approval).
   */
  wait?: number;
  [k: string]: unknown;
}
/**
 * The list parameters and the filters; filters given together all apply.
 */
export interface DecisionListQuery {
  limit?: number;
  /**
   * Id of the last item of the previous page.
   */
  starting_after?: string;
  /**
   * Only this agent's decisions.
   */
  agent_id?: string;
  /**
   * Only decisions with this effect.
   */
  effect?: 'allow' | 'deny' | 'review';
  /**
   * Only decisions with this reason: policy.matched, or a deny reason (policy.not_found, policy.disabled, resource.not_allowed, budget.exceeded, agent.revoked).
   */
  reason?: string;
  /**
   * Only decisions of this session (agent run).
   */
  session_id?: string;
  /**
   * Only decisions made on behalf of this user.
   */
  on_behalf_of?: string;
  /**
   * true: only decisions whose outcome with the shadow policies enabled differs (metadata.shadow); false: only the others.
   */
  shadow_diverged?: boolean;
}
/**
 * What the MCP gateway read in the result of the request this decision allowed (extension): the labels the result carries, which join the decision's session (source gateway), and what its detectors found. Never the matched text.
 */
export interface DecisionOutputRequest {
  /**
   * Labels the result carries (untrusted, private, secret, pii...): at most 32, each [a-z][a-z0-9_.-]{0,63}.
   *
   * @maxItems 32
   */
  labels: string[];
  /**
   * What the detectors found, per kind, rule and action; at most 64.
   *
   * @maxItems 64
   *
   * Items: What one detector rule found in a result, and what the gateway did (extension): never the matched text.
   */
  findings: {
    /**
     * The detector's label (secret, pii), or skipped for content that was not read (a binary blob, an image).
     */
    kind: string;
    /**
     * What matched: aws-access-key, github-token, email, phone, card, iban...; for skipped, the content's type (image, audio, blob).
     */
    rule: string;
    /**
     * How many matches.
     */
    count: number;
    /**
     * What the gateway did: labelled the result, redacted the matches, blocked the result, or did not read the content.
     */
    action: 'label' | 'redact' | 'block' | 'skipped';
  }[];
}
export interface DecisionRequest {
  /**
   * The agent asking; registered on first sight.
   */
  agent_id: string;
  /**
   * namespace.verb ([a-z][a-z0-9_]* each part), no wildcards.
   */
  action: string;
  /**
   * Free-form resource, matched by policies' resource globs.
   */
  resource?: string | null;
  /**
   * Spend in the unit of the held budgets that apply (a currency, or tokens); when budgets of two held units apply, give amounts instead.
   */
  amount?: number | null;
  /**
   * Spend per held unit (extension), e.g. { "USD": 0.12, "tokens": 3000 }: each held budget that applies holds the amount of its unit.
   */
  amounts?: {
    [k: string]: number;
  } | null;
  /**
   * Read by policy conditions as context.*.
   */
  context?: {
    [k: string]: unknown;
  } | null;
  /**
   * Decision (and permit token) lifetime; default 300.
   */
  ttl_seconds?: number;
  /**
   * The agent run, conversation or task this request belongs to (extension). Stored, filterable, readable by conditions as session_id, carried in the permit as sid.
   */
  session_id?: string | null;
  /**
   * The user the agent acts for (extension). Stored, filterable, readable by conditions as on_behalf_of, carried in the permit as obo.
   */
  on_behalf_of?: string | null;
  /**
   * base64url SHA-256 of the RFC 8785 canonical JSON of the tool call's arguments (extension); the permit carries it as args.
   */
  args_digest?: string | null;
}
export interface DecisionResolveRequest {
  /**
   * Confirm only: the amount actually spent (defaults to the held amount).
   */
  amount?: number;
  /**
   * Confirm only (extension): per held unit, what was actually spent, e.g. { "USD": 0.09, "tokens": 2410 }; a unit not named confirms its held amount.
   */
  amounts?: {
    [k: string]: number;
  };
}
export interface ListQuery {
  limit?: number;
  /**
   * Id of the last item of the previous page.
   */
  starting_after?: string;
  /**
   * Only this agent's items (decisions, budgets).
   */
  agent_id?: string;
  /**
   * Only events of this type.
   */
  type?: string;
}
export interface PermitVerifyRequest {
  /**
   * A permit token (compact JWS) from a decision.
   */
  token: string;
}
export interface ReviewListQuery {
  /**
   * open: oldest first (the queue); approved, denied: newest first.
   */
  status?: 'open' | 'approved' | 'denied';
  limit?: number;
  /**
   * Id of the last item of the previous page.
   */
  starting_after?: string;
}
/**
 * A reviewer's verdict on a review decision (extension: human review).
 */
export interface ReviewRequest {
  /**
   * approve: a decision awaiting approval becomes pending and gets its permit; deny: it becomes deny review.denied. On a review decision that did not wait, the verdict is recorded and changes nothing else.
   */
  verdict: 'approve' | 'deny';
  /**
   * Who reviews (a name or an email, as the reviewer's team knows them).
   */
  reviewer: string;
  /**
   * Why; shown with the review.
   */
  note?: string;
}
export interface SessionLabelsRequest {
  /**
   * Labels to add to the session, each [a-z][a-z0-9_.-]{0,63} (400 validation.invalid_field naming the bad one); at most 32 in one call (400 validation.too_many_labels); a session holds at most 256 (409 session.too_many_labels, nothing added)
   *
   * @minItems 1
   */
  labels: string[];
  /**
   * The agent whose tool found what the labels say (kept with the labels for audit)
   */
  agent_id: string;
  /**
   * Why, in words (`read /hr/salaries.csv`): answered with each label this call adds
   */
  detail?: string | null;
}
export interface StatsBudgetsQuery {
  /**
   * How many budgets, nearest their limits first.
   */
  limit?: number;
}
export interface StatsDecisionsQuery {
  /**
   * The window: the last this many minutes, the current one included.
   */
  minutes?: number;
  /**
   * How many of the agents and actions denied most.
   */
  top?: number;
}
export interface WebhookCreateRequest {
  /**
   * Where events are POSTed. Live: https and a public address only.
   */
  url: string;
  /**
   * ["*"] for every event, or event types (decision.allow, budget.exceeded, ...). Default ["*"].
   *
   * @minItems 1
   * @maxItems 20
   */
  events?: string[];
  description?: string;
  /**
   * Also send the Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature) so receivers can refuse old deliveries. Default false.
   */
  standard_webhooks?: boolean;
}
export interface WebhookUpdateRequest {
  url?: string;
  /**
   * @minItems 1
   * @maxItems 20
   */
  events?: string[];
  description?: string | null;
  /**
   * A disabled endpoint receives nothing; its pending deliveries wait.
   */
  status?: 'enabled' | 'disabled';
  /**
   * Turns the Standard Webhooks headers on or off. On: 400 for an endpoint registered before they existed (its secret is not whsec_ + base64).
   */
  standard_webhooks?: boolean;
}
