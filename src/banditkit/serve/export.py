"""Reading a service's state back from its database: ``banditkit serve export``.

The state is rebuilt as the service rebuilds it at a restart (the last snapshot, then the
log after it), read-only: nothing is written, so it can run while the service runs (SQLite's
WAL mode lets a reader in beside the writer). Feedbacks waiting for the next scheduled
learning step are not learned: the file holds the model the service decides with.
"""

from __future__ import annotations

import os
from typing import Any

import banditkit as bk
from banditkit.serve.config import PolicySpec
from banditkit.serve.state import PolicyState
from banditkit.serve.store import DatabaseError, EventLog

__all__ = ["export_policy", "replayed_state"]


def replayed_state(log: EventLog, policy_id: str) -> PolicyState:
    """The state of ``policy_id`` after every logged event (snapshot, then replay).

    Raises:
        DatabaseError: The database never served ``policy_id`` (the message lists those
            it served).
    """
    definition = log.definition(policy_id)
    if definition is None:
        served = ", ".join(log.policy_ids()) or "none"
        raise DatabaseError(
            f"{log.url} holds no log of policy {policy_id!r} (policies: {served})."
        )
    spec = PolicySpec(id=policy_id, **definition)
    state = PolicyState(spec, log, next_seq=_no_new_events)
    state.restore()
    return state


def _no_new_events() -> int:
    raise RuntimeError("a reader's replay logs no event")


def export_policy(
    url: str, policy_id: str, out: str | os.PathLike[str]
) -> dict[str, Any]:
    """Write the current state of a served policy as a ``.bk`` file ``bk.load_policy`` reads.

    Returns:
        The policy's counts (``GET /v1/policies/{id}``) at the exported log position.

    Raises:
        DatabaseError: The database cannot be opened or never served ``policy_id``.
    """
    log = EventLog(url, create=False)
    try:
        state = replayed_state(log, policy_id)
        bk.save_policy(state.policy, out)
        return state.status()
    finally:
        log.close()
