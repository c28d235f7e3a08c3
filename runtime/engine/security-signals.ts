/**
 * Counts of suspicious events per account and environment in a sliding window
 * (invalid permit tokens so far), kept in memory for the security alerts.
 */
import type { Environment } from '../auth/api-keys.js';
import type { Clock } from '../clock.js';

export type SignalKind = 'invalid_permit_tokens';

export class SecuritySignals {
  private readonly events = new Map<string, number[]>();

  constructor(
    private readonly clock: Clock,
    private readonly windowMs = 60_000,
  ) {}

  /** Records one occurrence; returns how many fell in the window, this one included. */
  record(kind: SignalKind, accountId: string, environment: Environment): number {
    const key = `${kind}:${accountId}:${environment}`;
    const now = this.clock.now();
    const times = (this.events.get(key) ?? []).filter((t) => t > now - this.windowMs);
    times.push(now);
    this.events.set(key, times);
    return times.length;
  }

  count(kind: SignalKind, accountId: string, environment: Environment): number {
    const now = this.clock.now();
    return (this.events.get(`${kind}:${accountId}:${environment}`) ?? []).filter((t) => t > now - this.windowMs).length;
  }
}
