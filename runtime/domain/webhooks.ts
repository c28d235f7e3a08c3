/**
 * Webhook endpoints: registration (URL rules, event filter, the `whsec_`
 * secret shown once, the Standard Webhooks opt-in), changes, deletion; their
 * deliveries and replays.
 */
import { randomBytes } from 'node:crypto';
import type { WebhookCreateRequest, WebhookUpdateRequest } from '../../clients/typescript/wire.js';
import type { Principal } from '../tenant.js';
import type { Clock } from '../clock.js';
import { InvalidFieldError, InvalidUrlError, WebhookNotFoundError } from '../errors/api-error.js';
import { EVENT_TYPES } from '../events/build.js';
import { newId } from '../ids.js';
import { openText, sealText } from '../secrets/sealed-text.js';
import type { Sql } from '../store/connect.js';
import type { Page, PageParams } from '../store/pagination.js';
import {
  deleteEndpoint,
  findDelivery,
  findEndpoint,
  insertEndpoint,
  insertReplay,
  listDeliveries,
  listEndpoints,
  updateEndpoint,
  type DeliveryRow,
  type EndpointChange,
  type EndpointRow,
} from '../store/webhooks.js';
import { DeliveryNotFoundError } from '../errors/api-error.js';
import { standardWebhookKey } from '../webhooks/standard-webhooks.js';
import { checkWebhookUrl, resolveProblem, type UrlRules } from '../webhooks/url-policy.js';

/** What an endpoint is changed with: the body of `PUT /v1/webhooks/:id` (generated from schemas/api/webhook-update.schema.json). */
export type EndpointInput = WebhookUpdateRequest;

/**
 * A new signing secret: `whsec_` + 32 random bytes in base64 (with `+`, `/`
 * and `=`): the form the Standard Webhooks libraries decode into their key.
 * (Endpoints registered before had base64url secrets: they keep them, and
 * cannot turn `standard_webhooks` on.)
 *
 * @example
 * newWebhookSecret(); // 'whsec_q3N0Z0...Yw='
 */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

function checkEvents(events: readonly string[]): void {
  if (events.includes('*') && events.length > 1)
    throw new InvalidFieldError('events: "*" stands alone (every event)', {
      details: [{ path: '/events', message: '"*" must be the only item' }],
    });
  events.forEach((type, i) => {
    if (type !== '*' && !(EVENT_TYPES as readonly string[]).includes(type)) {
      const message = `unknown event type "${type}"; known: ${EVENT_TYPES.join(', ')}, or "*"`;
      throw new InvalidFieldError(message, { details: [{ path: `/events/${i}`, message }] });
    }
  });
}

export class WebhookService {
  constructor(
    private readonly sql: Sql,
    private readonly clock: Clock,
    private readonly options: { allowPrivate: boolean; masterKey?: string },
  ) {}

  private rules(p: Principal): UrlRules {
    return { environment: p.environment, allowPrivate: this.options.allowPrivate };
  }

  private async checkUrl(p: Principal, raw: string): Promise<string> {
    const checked = checkWebhookUrl(raw, this.rules(p));
    if (!checked.ok)
      throw new InvalidUrlError(`url: ${checked.reason}`, { details: [{ path: '/url', message: checked.reason }] });
    const problem = await resolveProblem(checked.url.hostname, this.rules(p));
    if (problem) throw new InvalidUrlError(`url: ${problem}`, { details: [{ path: '/url', message: problem }] });
    return checked.url.href;
  }

  /** The row and its secret in clear (answered once, never again). */
  async create(p: Principal, input: WebhookCreateRequest): Promise<{ row: EndpointRow; secret: string }> {
    const url = await this.checkUrl(p, input.url);
    const events = input.events ?? ['*'];
    checkEvents(events);
    const secret = newWebhookSecret();
    const sealed = sealText(secret, this.options.masterKey);
    const at = new Date(this.clock.now());
    const row: EndpointRow = {
      account_id: p.accountId,
      environment: p.environment,
      id: newId('we', this.clock.now()),
      url,
      events,
      description: input.description ?? null,
      status: 'enabled',
      standard_webhooks: input.standard_webhooks ?? false,
      secret: sealed.text,
      secret_encrypted: sealed.encrypted,
      created_at: at,
      updated_at: at,
    };
    await insertEndpoint(this.sql, row);
    return { row, secret };
  }

  async get(p: Principal, id: string): Promise<EndpointRow> {
    const row = await findEndpoint(this.sql, p.accountId, p.environment, id);
    if (!row) throw new WebhookNotFoundError(`no webhook endpoint ${id}`);
    return row;
  }

  async update(p: Principal, id: string, input: EndpointInput): Promise<EndpointRow> {
    const change: EndpointChange = {};
    if (input.url !== undefined) change.url = await this.checkUrl(p, input.url);
    if (input.events !== undefined) {
      checkEvents(input.events);
      change.events = input.events;
    }
    if (input.description !== undefined) change.description = input.description;
    if (input.status !== undefined) change.status = input.status;
    if (input.standard_webhooks !== undefined) {
      if (input.standard_webhooks) await this.checkStandardSecret(p, id);
      change.standard_webhooks = input.standard_webhooks;
    }
    const row = await updateEndpoint(this.sql, p.accountId, p.environment, id, change, new Date(this.clock.now()));
    if (!row) throw new WebhookNotFoundError(`no webhook endpoint ${id}`);
    return row;
  }

  /** 400 when the endpoint's secret is of the older base64url form, which Standard Webhooks receivers cannot decode. */
  private async checkStandardSecret(p: Principal, id: string): Promise<void> {
    const row = await this.get(p, id);
    const secret = openText(row.secret, row.secret_encrypted, this.options.masterKey, 'the webhook secrets');
    if (standardWebhookKey(secret) !== null) return;
    const message =
      'standard_webhooks: this endpoint was registered before Standard Webhooks support and its secret is not whsec_ + base64; register a new endpoint with "standard_webhooks": true';
    throw new InvalidFieldError(message, { details: [{ path: '/standard_webhooks', message }] });
  }

  async delete(p: Principal, id: string): Promise<void> {
    if (!(await deleteEndpoint(this.sql, p.accountId, p.environment, id)))
      throw new WebhookNotFoundError(`no webhook endpoint ${id}`);
  }

  list(p: Principal, page: PageParams): Promise<Page<EndpointRow>> {
    return listEndpoints(this.sql, p.accountId, p.environment, page);
  }

  /** The endpoint's deliveries, newest first (404 for an unknown endpoint). */
  async deliveries(
    p: Principal,
    endpointId: string,
    page: PageParams,
  ): Promise<{ endpoint: EndpointRow; page: Page<DeliveryRow> }> {
    const endpoint = await this.get(p, endpointId);
    return { endpoint, page: await listDeliveries(this.sql, p.accountId, p.environment, endpoint.id, page) };
  }

  /** Delivers a delivery's event again now, as a new delivery (`replay_of` the original). */
  async replay(p: Principal, endpointId: string, deliveryId: string): Promise<DeliveryRow> {
    const endpoint = await this.get(p, endpointId);
    const original = await findDelivery(this.sql, p.accountId, p.environment, endpoint.id, deliveryId);
    if (!original) throw new DeliveryNotFoundError(`no delivery ${deliveryId} of webhook endpoint ${endpoint.id}`);
    const now = this.clock.now();
    const id = newId('whd', now);
    await insertReplay(
      this.sql,
      { ...original, account_id: p.accountId, environment: p.environment },
      id,
      new Date(now),
    );
    return (await findDelivery(this.sql, p.accountId, p.environment, endpoint.id, id))!;
  }
}
