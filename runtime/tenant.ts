/**
 * The tenant types every layer shares: an account, one of its two environments,
 * and the principal a request acts as (an API key of that account and
 * environment). A leaf module: it imports nothing.
 */

/** The environment an API key addresses: `svc_test_sk_...` or `svc_live_sk_...`. */
export type Environment = 'test' | 'live';

/** Who a request acts as: resolved from its API key before any route runs. */
export interface Principal {
  keyId: string;
  accountId: string;
  environment: Environment;
  scopes: string[];
}

/** Where a resource lives: every read and write is narrowed to one account and environment. */
export interface Tenant {
  accountId: string;
  environment: Environment;
}
