/** The public form of a session (docs/api.md#sessions). */
import type { Session, SessionLabel } from '../../clients/typescript/wire.js';
import type { SessionLabelRow, SessionRow } from '../store/sessions.js';

/**
 * A session: its labels in the order they were added, its decisions since it started.
 *
 * @example
 * sessionResource(row); // => { object: 'session', id: 'run-1', labels: [{ label: 'private', added_at: '...', source: 'api' }], decisions: 3, last_decision_at: '...' }
 */
export function sessionResource(row: SessionRow): Session {
  return {
    object: 'session',
    id: row.session_id,
    labels: row.labels.map(labelResource),
    decisions: row.decisions,
    last_decision_at: row.last_decision_at ? row.last_decision_at.toISOString() : null,
  };
}

function labelResource(l: SessionLabelRow): SessionLabel {
  return {
    label: l.label,
    added_at: l.added_at.toISOString(),
    source: l.source,
    ...(l.decision_id === null ? {} : { decision_id: l.decision_id }),
    ...(l.detail === null ? {} : { detail: l.detail }),
  };
}
