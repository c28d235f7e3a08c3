/**
 * security.alert (docs/webhooks-and-events.md#security-alerts: `data.alert`, `data.agent_id` where
 * one agent is concerned, `data.count`, `data.window_seconds`, `data.threshold`):
 *
 * - `deny_spike`: more than `denyThreshold` deny decisions for one agent in a
 *   window of `denyWindowSeconds`;
 * - `invalid_permit_tokens`: more than `invalidTokenThreshold` tokens refused by
 *   POST /v1/permits/verify for one account and environment in a window;
 * - `request_volume`: more decisions in a window of `volumeWindowSeconds` than
 *   `volumeFactor` times the average of the trailing `volumeBaselineWindows`
 *   windows, and at least `volumeMin`.
 *
 * Windows are fixed (aligned on the service clock). Counting is per process, in
 * memory; the store keeps at most one alert per kind, subject and window across
 * processes. Alerts are written off the request path.
 */
import type { Environment } from '../tenant.js';
import type { Clock } from '../clock.js';
import type { Sql } from '../store/connect.js';
import { eventRow } from '../events/build.js';
import { recordAlert, type AlertRecord } from '../store/security-alerts.js';

export interface AlertThresholds {
  denyThreshold: number;
  denyWindowSeconds: number;
  invalidTokenThreshold: number;
  invalidTokenWindowSeconds: number;
  volumeFactor: number;
  volumeMin: number;
  volumeWindowSeconds: number;
  volumeBaselineWindows: number;
}

export const DEFAULT_ALERT_THRESHOLDS: AlertThresholds = {
  denyThreshold: 20,
  denyWindowSeconds: 60,
  invalidTokenThreshold: 10,
  invalidTokenWindowSeconds: 60,
  volumeFactor: 10,
  volumeMin: 100,
  volumeWindowSeconds: 60,
  volumeBaselineWindows: 60,
};

interface Counter {
  window: number;
  count: number;
  fired: boolean;
}

interface VolumeHistory {
  /** Counts of past windows, oldest first, keyed by window number. */
  past: Map<number, number>;
  current: Counter;
}

export class SecurityAlerts {
  private readonly counters = new Map<string, Counter>();
  private readonly volume = new Map<string, VolumeHistory>();
  private readonly pending = new Set<Promise<unknown>>();

  constructor(
    private readonly sql: Sql,
    private readonly clock: Clock,
    readonly thresholds: AlertThresholds,
    private readonly onError: (e: unknown) => void = () => {},
  ) {}

  /** After every decision. */
  decision(accountId: string, environment: Environment, agentId: string, effect: string): void {
    if (effect === 'deny') {
      const { denyThreshold, denyWindowSeconds } = this.thresholds;
      this.count('deny_spike', accountId, environment, agentId, denyWindowSeconds, denyThreshold);
    }
    this.countVolume(accountId, environment);
  }

  /** After POST /v1/permits/verify refused a token. */
  invalidPermitToken(accountId: string, environment: Environment): void {
    const { invalidTokenThreshold, invalidTokenWindowSeconds } = this.thresholds;
    this.count('invalid_permit_tokens', accountId, environment, '', invalidTokenWindowSeconds, invalidTokenThreshold);
  }

  /** Resolves once every alert raised so far is stored. */
  async idle(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  private count(
    kind: 'deny_spike' | 'invalid_permit_tokens',
    accountId: string,
    environment: Environment,
    subject: string,
    windowSeconds: number,
    threshold: number,
  ): void {
    const now = this.clock.now();
    const window = Math.floor(now / (windowSeconds * 1000));
    const key = `${kind}:${accountId}:${environment}:${subject}`;
    let c = this.counters.get(key);
    if (!c || c.window !== window) {
      c = { window, count: 0, fired: false };
      this.counters.set(key, c);
    }
    c.count++;
    if (c.count > threshold && !c.fired) {
      c.fired = true;
      this.raise({
        account_id: accountId,
        environment,
        kind,
        subject,
        window_start: new Date(window * windowSeconds * 1000),
        event: eventRow('security.alert', accountId, environment, now, {
          alert: kind,
          ...(subject ? { agent_id: subject } : {}),
          count: c.count,
          window_seconds: windowSeconds,
          threshold,
        }),
      });
    }
  }

  private countVolume(accountId: string, environment: Environment): void {
    const { volumeWindowSeconds, volumeBaselineWindows, volumeFactor, volumeMin } = this.thresholds;
    const now = this.clock.now();
    const window = Math.floor(now / (volumeWindowSeconds * 1000));
    const key = `${accountId}:${environment}`;
    let h = this.volume.get(key);
    if (!h) {
      h = { past: new Map(), current: { window, count: 0, fired: false } };
      this.volume.set(key, h);
    }
    if (h.current.window !== window) {
      h.past.set(h.current.window, h.current.count);
      for (const w of h.past.keys()) if (w < window - volumeBaselineWindows) h.past.delete(w);
      h.current = { window, count: 0, fired: false };
    }
    h.current.count++;
    // The baseline: the average over the trailing windows (a window without requests counts 0).
    let sum = 0;
    for (const [w, n] of h.past) if (w >= window - volumeBaselineWindows) sum += n;
    const threshold = Math.max(volumeMin, Math.ceil((volumeFactor * sum) / volumeBaselineWindows));
    if (h.current.count > threshold && !h.current.fired) {
      h.current.fired = true;
      this.raise({
        account_id: accountId,
        environment,
        kind: 'request_volume',
        subject: '',
        window_start: new Date(window * volumeWindowSeconds * 1000),
        event: eventRow('security.alert', accountId, environment, now, {
          alert: 'request_volume',
          count: h.current.count,
          window_seconds: volumeWindowSeconds,
          threshold,
        }),
      });
    }
  }

  private raise(alert: AlertRecord): void {
    const p = recordAlert(this.sql, alert)
      .catch(this.onError)
      .finally(() => this.pending.delete(p));
    this.pending.add(p);
  }
}
