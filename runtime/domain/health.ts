/** Readiness of this process: its store reachable (503 service.unavailable otherwise). */
import { ServiceUnavailableError } from '../errors/api-error.js';
import type { Store } from '../store/connect.js';
import { ping } from '../store/health.js';

export class HealthService {
  constructor(private readonly store: Store) {}

  /** The store's kind when it answers. */
  async ready(): Promise<Store['kind']> {
    try {
      await ping(this.store.sql);
    } catch {
      throw new ServiceUnavailableError('the store is not reachable');
    }
    return this.store.kind;
  }
}
