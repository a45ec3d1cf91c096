"""Fixtures of the decision service's tests: databases (SQLite, PostgreSQL) and a live server.

PostgreSQL: the URL in ``BANDITKIT_TEST_POSTGRES`` (a server ``.ci/run`` started) when set,
else a throwaway cluster started here with ``benchmarks/serve/pg_cluster.py`` (initdb and
pg_ctl from Debian's ``postgresql`` package); the PostgreSQL tests are skipped, saying why,
only when neither is possible.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "benchmarks" / "serve"


def load_script(name: str) -> ModuleType:
    """A module of benchmarks/serve (they are not a package)."""
    spec = importlib.util.spec_from_file_location(
        f"serve_{name}", SCRIPTS / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def postgres() -> Iterator[str]:
    """The URL of a PostgreSQL server for the tests (see the module docstring)."""
    given = os.environ.get("BANDITKIT_TEST_POSTGRES")
    if given:
        yield given
        return
    cluster = load_script("pg_cluster")
    root = tempfile.mkdtemp(prefix="bk-pg-")
    try:
        url = cluster.start(root)
    except cluster.Unavailable as exc:
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"PostgreSQL tests skipped: {exc}")
    try:
        yield url
    finally:
        cluster.stop(root)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def pg_url(postgres: str) -> str:
    """A fresh database in the test PostgreSQL server."""
    cluster = load_script("pg_cluster")
    return str(cluster.create_database(postgres, f"bk_{uuid.uuid4().hex[:12]}"))


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: Any, tmp_path: Path) -> str:
    """A fresh database of each kind."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'events.db'}"
    return str(request.getfixturevalue("pg_url"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Live:
    """A service served by uvicorn in a thread of the test process."""

    def __init__(
        self, service: Any, tokens: dict[str, str | None] | None = None
    ) -> None:
        import uvicorn

        from banditkit.serve.app import create_app

        self.service = service
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            create_app(service, tokens),
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Live:
        self.thread.start()
        end = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < end, "uvicorn did not start"
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


def open_service(config: dict[str, Any], url: str, **kwargs: Any) -> Any:
    """An opened :class:`banditkit.serve.Service` of a config mapping."""
    from banditkit.serve import Service, load_config

    service = Service(load_config(config), url, **kwargs)
    service.open()
    return service


def open_writer_process(config: dict[str, Any], url: str) -> Any:
    """An opened :class:`banditkit.serve.process.WriterProcess` of a config mapping."""
    from banditkit.serve import load_config
    from banditkit.serve.process import WriterProcess

    writer = WriterProcess(load_config(config), url)
    writer.open()
    return writer
