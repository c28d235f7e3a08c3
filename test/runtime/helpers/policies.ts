/** A policy body with every field of a policy file given (none left to its default), for the policy API tests. */
export const FULL_POLICY = {
  id: 'pol_refunds_small',
  name: 'refunds-small',
  description: 'Support agents may refund small orders',
  state: 'disabled',
  priority: 7,
  effect: 'review',
  agents: ['support-*'],
  actions: ['payments.refund'],
  resources: ['order:*'],
  condition: "amount <= 50 && context.channel == 'chat'",
  rate_limit: { per_second: 2, per_minute: 30 },
  budget: { unit: 'USD', limit: 500, period: 'monthly', threshold_alert: 0.8 },
};
