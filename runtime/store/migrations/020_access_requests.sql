-- Access requests (issue 34; docs/api.md#access-requests-for-approvals, the
-- AuthZEN Access Request and Approval profile): the `context` a gateway sent
-- with POST /access/v1/requests for a decision awaiting approval, answered as
-- the decision's `review.request_context`. Null until an access request is
-- submitted ('{}' for one submitted without a context): set once, so a repeat
-- answers the same task.
alter table decisions add column review_request_context jsonb;
