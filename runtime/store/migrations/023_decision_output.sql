-- What the MCP gateway read in a result (issue 48; docs/api.md#post-v1decisionsidoutput-extension):
-- POST /v1/decisions/:id/output records, once, the labels the result of the
-- request a decision allowed carried and what the gateway's detectors found
-- (`{ "labels": [...], "findings": [{ "kind", "rule", "count", "action" }],
-- "recorded_at": ... }`), never the matched text. Null until recorded.
alter table decisions add column output jsonb;
