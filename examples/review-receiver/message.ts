/**
 * A review, as a chat message: the `decision.review` event of a decision that
 * waits for a human (or is flagged for one) becomes a Slack-style payload
 * (`text`, plus Block Kit `blocks` with Approve and Deny link buttons to the
 * dashboard's review queue), and `decision.reviewed` becomes a short follow-up
 * saying who decided. Pure: no network; post the payload wherever you like
 * (a Slack incoming webhook takes it as it is).
 *
 * The buttons are links: they open the dashboard on that review with its
 * Approve or Deny button focused. The reviewer signs in there and clicks;
 * nothing is approved by opening a link (a chat preview bot follows links too).
 */

/** The event envelope (docs/webhooks-and-events.md#events), as delivered or as GET /v1/events answers it. */
export interface EventEnvelope {
  id: string;
  type: string;
  created_at: string;
  livemode: boolean;
  data: Record<string, unknown>;
}

export interface ReviewMessageOptions {
  /** The dashboard's address, e.g. `https://authz.example.com/dashboard`. */
  dashboardUrl: string;
}

export interface ChatMessage {
  text: string;
  blocks: Array<Record<string, unknown>>;
}

interface DecisionData {
  id: string;
  agent_id: string;
  action: string;
  resource: string | null;
  amount: number | null;
  status: string;
  effect: string;
  reason: string;
  policy_id: string | null;
  approval_expires_at?: string | null;
  context?: Record<string, unknown> | null;
  on_behalf_of?: string | null;
  review?: { status: string; reviewer: string | null; note: string | null } | null;
}

/** Slack mrkdwn: &, < and > are the characters to escape. */
export function escapeMrkdwn(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

const code = (text: string) => `\`${escapeMrkdwn(text).replace(/`/g, "'")}\``;

function decisionOf(envelope: EventEnvelope): DecisionData | null {
  const d = envelope.data.decision as DecisionData | undefined;
  return d && typeof d.id === 'string' && typeof d.agent_id === 'string' ? d : null;
}

/** `https://.../dashboard#reviews/<id>/approve`: the review, its button focused. */
export function reviewLink(dashboardUrl: string, decisionId: string, verdict: 'approve' | 'deny'): string {
  return `${dashboardUrl.replace(/[#/]+$/, '')}#reviews/${encodeURIComponent(decisionId)}/${verdict}`;
}

/**
 * The chat message for a review event, or null for any other event (and for a
 * `decision.review` already answered).
 *
 * @example
 * const message = reviewMessage(envelope, { dashboardUrl: 'https://authz.example.com/dashboard' });
 * if (message) await fetch(process.env.SLACK_WEBHOOK_URL!, { method: 'POST', body: JSON.stringify(message) });
 */
export function reviewMessage(envelope: EventEnvelope, options: ReviewMessageOptions): ChatMessage | null {
  const d = decisionOf(envelope);
  if (!d) return null;
  const what = `${code(d.agent_id)} asks for ${code(d.action)}${d.resource ? ` on ${code(d.resource)}` : ''}${d.amount !== null ? ` (amount ${d.amount})` : ''}`;
  const test = envelope.livemode ? '' : ' [test]';
  if (envelope.type === 'decision.review' && d.review?.status === 'open') {
    const waiting = d.status === 'awaiting_approval';
    const headline = waiting
      ? `Approval needed${test}: ${what}`
      : `Review requested${test}: ${what} (already allowed; your verdict is recorded)`;
    const details = [
      `Decision ${code(d.id)}${d.policy_id ? `, policy ${code(d.policy_id)}` : ''}`,
      ...(d.on_behalf_of ? [`On behalf of ${code(d.on_behalf_of)}`] : []),
      ...(waiting && d.approval_expires_at
        ? [`Denied automatically if nobody answers by ${d.approval_expires_at}`]
        : []),
      ...(d.context && Object.keys(d.context).length > 0
        ? [`Context: ${code(JSON.stringify(d.context).slice(0, 500))}`]
        : []),
    ];
    return {
      text: headline,
      blocks: [
        { type: 'section', text: { type: 'mrkdwn', text: headline } },
        { type: 'context', elements: details.map((text) => ({ type: 'mrkdwn', text })) },
        {
          type: 'actions',
          block_id: `review_${d.id}`,
          elements: [
            {
              type: 'button',
              style: 'primary',
              text: { type: 'plain_text', text: 'Approve' },
              url: reviewLink(options.dashboardUrl, d.id, 'approve'),
              action_id: 'approve',
            },
            {
              type: 'button',
              style: 'danger',
              text: { type: 'plain_text', text: 'Deny' },
              url: reviewLink(options.dashboardUrl, d.id, 'deny'),
              action_id: 'deny',
            },
          ],
        },
      ],
    };
  }
  if (envelope.type === 'decision.reviewed' && d.review) {
    const r = d.review;
    const outcome =
      d.reason === 'review.timeout'
        ? 'timed out (nobody answered): denied'
        : `${r.status} by ${escapeMrkdwn(r.reviewer ?? 'a reviewer')}`;
    const text = `Review of ${code(d.id)}${test} ${outcome}: ${what}${r.note ? `. Note: ${escapeMrkdwn(r.note)}` : ''}`;
    return { text, blocks: [{ type: 'section', text: { type: 'mrkdwn', text } }] };
  }
  return null;
}
