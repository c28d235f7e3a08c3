/**
 * The benchmark targets' policy set and platform limit (server.ts), beside the
 * load generator (run.ts). No side effects: run.ts imports it.
 */
import type { Policy } from '../../compiler/index.js';

/** Requests per second per API key: the platform limit on, but never reached. */
export const BENCH_KEY_RATE_LIMIT = 1_000_000_000;

/** Limits large enough never to be reached, so that every allow pays the whole accounting. */
const NEVER_RATE = { per_second: 1_000_000_000 };
const NEVER_LIMIT = 1e12;

export const BENCH_POLICIES: Policy[] = [
  // Unconstrained: no rate limit, no budget.
  {
    id: 'pol_bench_allow',
    name: 'bench-allow',
    state: 'enabled',
    priority: 100,
    effect: 'allow',
    agents: ['bench-*'],
    actions: ['orders.read'],
    resources: ['order:*'],
  },
  {
    id: 'pol_bench_deny',
    name: 'bench-deny',
    state: 'enabled',
    priority: 10,
    effect: 'deny',
    agents: ['bench-*'],
    actions: ['orders.delete'],
  },
  // The same allow, with a calls budget and a rate limit.
  {
    id: 'pol_bench_calls',
    name: 'bench-calls',
    state: 'enabled',
    priority: 100,
    effect: 'allow',
    agents: ['bench-*'],
    actions: ['orders.list'],
    resources: ['order:*'],
    rate_limit: NEVER_RATE,
    budget: { unit: 'calls', limit: NEVER_LIMIT, period: 'monthly' },
  },
  // The same allow, with a fiat budget (holds the request's amount) and a rate limit.
  {
    id: 'pol_bench_usd',
    name: 'bench-usd',
    state: 'enabled',
    priority: 100,
    effect: 'allow',
    agents: ['bench-*'],
    actions: ['orders.pay'],
    resources: ['order:*'],
    rate_limit: NEVER_RATE,
    budget: { unit: 'USD', limit: NEVER_LIMIT, period: 'monthly' },
  },
];
