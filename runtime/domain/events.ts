/** Events of an environment, newest first, and one by id. */
import { EventNotFoundError } from '../errors/api-error.js';
import type { Sql } from '../store/connect.js';
import { findEvent, listEvents, type EventRow } from '../store/events.js';
import type { Page, PageParams } from '../store/pagination.js';
import type { Principal } from '../tenant.js';

export class EventService {
  constructor(private readonly sql: Sql) {}

  list(p: Principal, page: PageParams, type?: string): Promise<Page<EventRow>> {
    return listEvents(this.sql, p.accountId, p.environment, page, type);
  }

  async get(p: Principal, id: string): Promise<EventRow> {
    const row = await findEvent(this.sql, p.accountId, p.environment, id);
    if (!row) throw new EventNotFoundError(`no event ${id}`);
    return row;
  }
}
