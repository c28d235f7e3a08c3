"""The blocking client: :class:`AuthzClient`.

Example::

    from agent_authz import AuthzClient

    authz = AuthzClient(base_url="http://127.0.0.1:8080", api_key="svc_test_sk_...")
    decision = authz.decide(agent_id="agent_7", action="payments.charge", amount=12.5)
    if decision["effect"] != "deny":
        charge()
        authz.confirm(decision["id"], amount=12.5)
"""
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence

from ._calls import Call, CallRun, ClientCore, add_labels_call, confirm_call, confirmed_elsewhere, get_call, get_session_call, reject_call
from ._request import Decision, DecisionRequest, decision_request, takes_decision_request
from .guard import Guard

if TYPE_CHECKING:  # for the type checker only: the package is standard library only at run time
    from typing_extensions import Unpack


class AuthzClient(ClientCore):
    """A client of the agent-authz service (standard library only, blocking).

    Args:
        base_url: the service, e.g. ``http://127.0.0.1:8080``.
        api_key: ``svc_test_sk_...`` or ``svc_live_sk_...``.
        timeout: seconds per HTTP attempt.
        retries: retries after the first attempt for network failures, 5xx and
            429 (backoff 0.2 s, 0.4 s, 0.8 s ..., or the ``Retry-After``).
        session_id, on_behalf_of: defaults for every ``decide`` (sent only when set).
        retry_policy: a :class:`RetryPolicy` replacing ``retries`` and the backoff.

    Every error answer raises :class:`AuthzError`; no answer after the retries
    raises ``AuthzError`` ``client.network_error``: the client fails closed.

    Example::

        authz = AuthzClient(base_url=url, api_key=key, retries=5)
        d = authz.decide(agent_id="agent_7", action="orders.read", resource="order:1")
    """

    def _run(self, call: Call) -> CallRun:
        """Runs the call's attempts until it is over; the finished run."""
        run = CallRun(call, self.retry_policy, self.base_url)
        while True:
            wait = run.outcome(self._send(run))
            if wait is None:
                return run
            self.retry_policy.sleep(wait)

    @takes_decision_request
    def decide(self, **fields: "Unpack[DecisionRequest]") -> Decision:
        """``POST /v1/decisions``: the decision dict for allow, deny and review alike (a deny is a value).

        The keywords are the fields of :class:`~agent_authz._request.DecisionRequest`:
        ``agent_id`` and ``action`` (required), ``resource``, ``amount``, ``context``,
        ``ttl_seconds``, ``session_id``, ``on_behalf_of``, ``amounts``; those left
        ``None`` are not sent, and ``session_id`` and ``on_behalf_of`` default to the client's.

        Example::

            d = authz.decide(agent_id="agent_7", action="orders.delete")
            d["effect"], d["reason"]   # ("deny", "policy.not_found")
        """
        call = self._decide_call(fields)
        return self._run(call).result()

    def confirm(self, id: str, amount: Optional[float] = None, amounts: Optional[Dict[str, float]] = None) -> Decision:
        """``POST /v1/decisions/:id/confirm``: the confirmed decision.

        A retry answered ``409 decision.already_confirmed`` (its earlier attempt
        was applied) counts as done: the decision is read back and answered.

        ``amounts`` confirms per held unit (``{"USD": 0.09, "tokens": 2410}``);
        a unit not named confirms its held amount.

        Example: ``authz.confirm(d["id"], amount=9.99)["status"]`` is ``"confirmed"``.
        """
        run = self._run(confirm_call(id, amount, amounts))
        if not run.done_earlier:
            return run.result()
        try:
            return self.get(id)
        except Exception:  # the confirm is done; reading it back is a courtesy
            return confirmed_elsewhere(id)

    def reject(self, id: str) -> Decision:
        """``POST /v1/decisions/:id/reject``: the rejected decision (its holds are released).

        Example: ``authz.reject(d["id"])["status"]`` is ``"rejected"``.
        """
        return self._run(reject_call(id)).result()

    def budgets_remaining(self, *, agent_id: str, session_id: Optional[str] = None, on_behalf_of: Optional[str] = None) -> List[Dict[str, Any]]:
        """``GET /v1/budgets/remaining``: what is left this period of each budget that would
        apply to the agent, its session and its user (the client's ``session_id`` and
        ``on_behalf_of`` when none is given; the key needs ``budgets:read``).

        Example::

            left = authz.budgets_remaining(agent_id="research-bot", session_id="run_42")
            usd = next(b["remaining"] for b in left if b["unit"] == "USD")
        """
        call = self._remaining_call(agent_id, session_id, on_behalf_of)
        return list(self._run(call).result().get("data", []))

    def add_labels(self, labels: Sequence[str], *, agent_id: str, session_id: Optional[str] = None, detail: Optional[str] = None) -> Dict[str, Any]:
        """``POST /v1/sessions/:session_id/labels``: adds labels (what a tool found in what it
        read: ``private``, ``untrusted``, ``pii``) to the session (the client's ``session_id``
        when none is given), so that its next decisions, in any process, are decided with
        them; the key needs ``decisions:write``. Returns the session. A label the session
        holds changes nothing, so a retry is harmless. More than 32 labels raise
        ``AuthzError`` ``validation.too_many_labels``; past 256 in the session,
        ``session.too_many_labels``.

        Example::

            authz.add_labels(["private"], agent_id="files-bot", detail="read /hr/salaries.csv")
        """
        call = add_labels_call(session_id if session_id is not None else self.session_id, labels, agent_id, detail)
        return self._run(call).result()

    def get_session(self, session_id: Optional[str] = None) -> Dict[str, Any]:
        """``GET /v1/sessions/:session_id``: the session (the client's ``session_id`` when none
        is given): ``labels`` (each ``label``, ``added_at``, ``source``, and ``decision_id`` /
        ``detail`` when known), ``decisions`` and ``last_decision_at``; the key needs
        ``decisions:read``. A session without a decision or label, or ended after
        ``AUTHZ_SESSION_IDLE_HOURS``, raises ``AuthzError`` ``session.not_found``.

        Example: ``[l["label"] for l in authz.get_session("run-42")["labels"]]``.
        """
        call = get_session_call(session_id if session_id is not None else self.session_id)
        return self._run(call).result()

    def get(self, id: str) -> Decision:
        """``GET /v1/decisions/:id``: the decision as it stands (``pending``, ``confirmed`` ...).

        Example: ``authz.get("dec_...")["status"]``.
        """
        return self._run(get_call(id)).result()

    @takes_decision_request
    def guard(self, **fields: "Unpack[DecisionRequest]") -> Guard:
        """Decide, run the work only if allowed, then confirm or reject (see :mod:`agent_authz.guard`).

        Example::

            with authz.guard(agent_id="agent_7", action="payments.charge", amount=5) as d:
                charge(d["permit_token"])          # confirmed with amount=5 on exit

            @authz.guard(agent_id="agent_7", action="orders.read")
            def read():                            # each call decided, then confirmed
                ...
        """
        return Guard(self, decision_request(fields))
