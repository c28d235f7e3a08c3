-- Webhook endpoints that also carry the Standard Webhooks headers (webhook-id,
-- webhook-timestamp, webhook-signature) so receivers can refuse old deliveries
-- (docs/webhooks-and-events.md#standard-webhooks-replay-protection).
alter table webhook_endpoints add column standard_webhooks boolean not null default false;
