/** Events of an environment, newest first, and one by id. */
import { EventNotFoundError } from '../errors/api-error.js';
import { eventBodies } from '../events/references.js';
import type { Sql } from '../store/connect.js';
import { findEvent, listEvents, type EventRow, type StoredEventRow } from '../store/events.js';
import type { Page, PageParams } from '../store/pagination.js';
import type { Principal } from '../tenant.js';

export class EventService {
  constructor(private readonly sql: Sql) {}

  async list(p: Principal, page: PageParams, type?: string): Promise<Page<EventRow>> {
    const stored = await listEvents(this.sql, p.accountId, p.environment, page, type);
    return { ...stored, data: await this.withBodies(stored.data) };
  }

  async get(p: Principal, id: string): Promise<EventRow> {
    const row = await findEvent(this.sql, p.accountId, p.environment, id);
    if (!row) throw new EventNotFoundError(`no event ${id}`);
    const [event] = await this.withBodies([row]);
    return event!;
  }

  /** Decision events that name their decision get their bodies (events/references.ts). */
  private async withBodies(rows: readonly StoredEventRow[]): Promise<EventRow[]> {
    const bodies = await eventBodies(this.sql, rows);
    return rows.map(({ decision_id: _ref, ...row }, i) => ({ ...row, data: bodies[i]! }));
  }
}
