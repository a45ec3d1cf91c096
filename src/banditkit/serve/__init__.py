"""The decision service: banditkit policies behind an HTTP API, every event durable.

    banditkit serve CONFIG --db URL [--host 127.0.0.1] [--port 8000]
    banditkit serve export --db URL --policy ID --out FILE.bk
    banditkit evaluate --db URL --policy ID --candidate NAME[:k=v,...]

    config    the YAML configuration (:func:`load_config`)
    schedule  when the model learns (every N feedbacks, static grids)
    store     the event log and snapshots in SQLite or PostgreSQL (SQLAlchemy)
    state     one policy's state, advanced by logged events only (live and replay alike)
    service   the single writer thread with group commit
    process   the writer in a child process (``serve run``'s default): no shared GIL
    app       the FastAPI app (:func:`create_app`)
    metrics   Prometheus metrics
    export    the current state as a ``.bk`` file
    evaluate  off-policy evaluation of candidates on the service's own log

The service needs the ``serve`` extra: ``pip install 'banditkit[serve]'`` (docs/serve.md).
"""

from banditkit.core.lazy import lazy_import
from banditkit.serve.config import (
    Limits,
    PolicySpec,
    ServeConfig,
    ServeConfigError,
    load_config,
)
from banditkit.serve.export import export_policy
from banditkit.serve.process import WriterProcess
from banditkit.serve.service import Service
from banditkit.serve.store import DatabaseError, EventLog, redact

_app = lazy_import("banditkit.serve.app")  # FastAPI: imported by ``create_app`` only

__all__ = [
    "DatabaseError",
    "EventLog",
    "Limits",
    "PolicySpec",
    "ServeConfig",
    "ServeConfigError",
    "Service",
    "WriterProcess",
    "create_app",
    "export_policy",
    "load_config",
    "redact",
]


def __getattr__(name: str) -> object:
    """``create_app`` on first use: it imports FastAPI (the ``serve`` extra)."""
    if name == "create_app":
        return _app.create_app
    raise AttributeError(f"module 'banditkit.serve' has no attribute {name!r}")
