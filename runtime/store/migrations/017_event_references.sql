-- Decision events by reference (issue 25): a decision.allow / decision.deny
-- event no longer stores a second copy of its decision. Its row keeps the event's
-- own fields and names the decision (`decision_id`); the body is built when the
-- event is read (runtime/events/references.ts) from the decision row, whose
-- fields an allow or deny decision never changes but its status, resolution
-- time and confirmed amount, which the event shows as they were when decided.
-- A review decision's event keeps its body by value: a verdict changes the
-- decision's effect, reason and expiry.
alter table events add column decision_id text;
alter table events alter column data drop not null;
alter table events add constraint events_body check (data is not null or decision_id is not null);
