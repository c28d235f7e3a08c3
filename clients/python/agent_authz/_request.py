"""The decision request, defined once: the keywords ``decide`` and ``guard`` take
(on both clients) are the fields of :class:`DecisionRequest`, and
:func:`decision_request` turns them into the body of ``POST /v1/decisions``.

A leaf module: it imports nothing from the package, so the clients, the guards
and the calls can all use it without importing one another.

Example::

    decision_request({"agent_id": "bot", "action": "orders.read", "resource": None}, session_id="run_1")
    # {'agent_id': 'bot', 'action': 'orders.read', 'session_id': 'run_1'}
"""
import inspect
from typing import Any, Callable, Dict, Mapping, Optional, Tuple, TypedDict, TypeVar, cast

Decision = Dict[str, Any]
"""A decision as the service answers it (``id``, ``effect``, ``status``, ``reason`` ...)."""


class _RequiredFields(TypedDict):
    agent_id: str
    action: str


class DecisionRequest(_RequiredFields, total=False):
    """The keywords of ``decide`` and ``guard``, in their order, named as the wire
    fields of ``POST /v1/decisions``; a field left ``None`` is not sent (the
    service's default applies; for ``session_id`` and ``on_behalf_of``, the
    client's default).

    ``amounts``: spend per held unit when budgets of several held units apply,
    e.g. ``{"USD": 0.12, "tokens": 3000}``. ``args_digest``: the base64url
    SHA-256 (43 characters) of the RFC 8785 canonical JSON of the tool call's
    arguments; the permit carries it as ``args``.

    test/clients/python-request-fields.test.ts holds these fields to
    schemas/api/decision-request.schema.json.
    """

    resource: Optional[str]
    amount: Optional[float]
    context: Optional[Dict[str, Any]]
    ttl_seconds: Optional[int]
    session_id: Optional[str]
    on_behalf_of: Optional[str]
    amounts: Optional[Dict[str, float]]
    args_digest: Optional[str]


REQUIRED: Tuple[str, ...] = tuple(name for name in DecisionRequest.__annotations__ if name in DecisionRequest.__required_keys__)
"""The fields every request has (``agent_id``, ``action``)."""

FIELDS: Tuple[str, ...] = tuple(DecisionRequest.__annotations__)
"""Every field, in the keywords' order."""


def decision_request(
    fields: Mapping[str, Any],
    *,
    session_id: Optional[str] = None,
    on_behalf_of: Optional[str] = None,
) -> DecisionRequest:
    """The request (and body of ``POST /v1/decisions``) of ``decide``'s keywords.

    An unknown or a missing required keyword raises ``TypeError``, as a Python
    call with a wrong keyword does. Fields left ``None`` are dropped;
    ``session_id`` and ``on_behalf_of`` given here fill in the fields the
    keywords leave ``None`` (a client's defaults). ``agent_id`` and ``action``
    are always sent (the service answers a missing or empty one).

    Example: ``decision_request({"agent_id": "a", "action": "x", "amount": None})``
    is ``{"agent_id": "a", "action": "x"}``.
    """
    unknown = [name for name in fields if name not in FIELDS]
    if unknown:
        raise TypeError(f"unexpected keyword argument {unknown[0]!r} (a decision request takes {', '.join(FIELDS)})")
    missing = [name for name in REQUIRED if name not in fields]
    if missing:
        raise TypeError(f"missing required keyword argument {missing[0]!r}")
    defaults = {"session_id": session_id, "on_behalf_of": on_behalf_of}
    body: Dict[str, Any] = {name: fields[name] for name in REQUIRED}
    for name in FIELDS:
        if name in REQUIRED:
            continue
        value = fields.get(name)
        if value is None:
            value = defaults.get(name)
        if value is not None:
            body[name] = value
    return cast(DecisionRequest, body)


def confirm_amounts(request: DecisionRequest) -> Tuple[Optional[float], Optional[Dict[str, float]]]:
    """What a guard confirms its decision with: ``(amount, amounts)`` of the request
    (``amounts`` when given, else ``amount``; both ``None`` confirms the held amounts).

    Example: ``confirm_amounts({"agent_id": "a", "action": "x", "amount": 5})`` is ``(5, None)``.
    """
    amounts = request.get("amounts")
    return (None if amounts else request.get("amount")), amounts


F = TypeVar("F", bound=Callable[..., Any])


def takes_decision_request(method: F) -> F:
    """Marks a method ``(self, **fields)`` that takes a decision request's keywords:
    its ``inspect.signature`` (``help()``, IDEs, documentation) lists them, keyword-only,
    as :class:`DecisionRequest` defines them. Static type checkers read the method's
    ``**fields: Unpack[DecisionRequest]`` annotation instead."""
    hints = DecisionRequest.__annotations__
    keywords = [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            default=inspect.Parameter.empty if name in REQUIRED else None,
            annotation=hints[name],
        )
        for name in FIELDS
    ]
    signature = inspect.signature(method)
    self_parameter = next(iter(signature.parameters.values()))
    method.__signature__ = signature.replace(parameters=[self_parameter, *keywords])  # type: ignore[attr-defined]
    return method
