-- Human review (docs/reviews.md#the-rules).
--
-- A decision a review policy decided carries its review: review_status open
-- until a reviewer answers (approved | denied), the reviewer's name and note,
-- when, and the API key that reviewed (reviewer_key_id: kept for audit, not
-- answered). Allow and deny decisions have none (review_status null).
--
-- Approval before the action: a review policy with approval.required makes its
-- decisions wait in status awaiting_approval until approval_expires_at; approved
-- they become pending (expires_at moved to the approval time + ttl_seconds),
-- denied or timed out they become effect deny, status denied (reasons
-- review.denied, review.timeout).
alter table decisions drop constraint decisions_status_check;
alter table decisions add constraint decisions_status_check
  check (status in ('pending', 'confirmed', 'rejected', 'denied', 'awaiting_approval')) not valid;
alter table decisions validate constraint decisions_status_check;

alter table decisions
  add column review_status text,
  add column reviewer text,
  add column review_note text,
  add column reviewed_at timestamptz,
  add column reviewer_key_id text,
  add column approval_expires_at timestamptz;
alter table decisions add constraint decisions_review_status_check
  check (review_status in ('open', 'approved', 'denied')) not valid;
alter table decisions validate constraint decisions_review_status_check;

-- GET /v1/reviews?status=: open ones oldest first, the others newest first.
-- Only review decisions are indexed (allow and deny, the bulk, never are).
create index decisions_reviews on decisions (account_id, environment, review_status, seq)
  where review_status is not null;

-- The approval timeout sweep (every process, all tenants) and the lazy check of
-- one environment: only decisions still waiting are indexed.
create index decisions_awaiting on decisions (approval_expires_at)
  where status = 'awaiting_approval';

-- GET /v1/stats/decisions reads a time window through decisions_by_time
-- (migration 013: account, environment, evaluated_at, seq).
