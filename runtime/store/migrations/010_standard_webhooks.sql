-- Webhook endpoints that also carry the Standard Webhooks headers (webhook-id,
-- webhook-timestamp, webhook-signature) so receivers can refuse old deliveries
-- (contract, second part: "Webhooks receivers can check for replays").
alter table webhook_endpoints add column standard_webhooks boolean not null default false;
