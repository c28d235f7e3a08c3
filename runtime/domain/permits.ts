/**
 * Online verification of permit tokens (POST /v1/permits/verify): the
 * signature against this service's keys, the tenant, the expiry. A failed
 * verification counts toward the `invalid_permit_tokens` security alert.
 */
import type { SecurityAlerts } from '../alerts/security-alerts.js';
import type { Clock } from '../clock.js';
import { ApiError } from '../errors/api-error.js';
import type { KeyRing } from '../permits/key-ring.js';
import type { PermitClaims } from '../permits/sign.js';
import { verifyPermit } from '../permits/verify.js';
import type { Principal } from '../tenant.js';

export class PermitService {
  constructor(
    private readonly ring: KeyRing,
    private readonly clock: Clock,
    private readonly alerts: SecurityAlerts,
    private readonly baseUrl: string,
  ) {}

  /** The token's claims; 401 auth.expired / auth.signature_invalid otherwise. */
  async verify(p: Principal, token: string): Promise<PermitClaims> {
    try {
      return await verifyPermit(token, this.ring, this.clock, p, this.baseUrl);
    } catch (error) {
      if (error instanceof ApiError) this.alerts.invalidPermitToken(p.accountId, p.environment);
      throw error;
    }
  }
}
