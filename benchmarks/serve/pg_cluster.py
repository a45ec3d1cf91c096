"""A throwaway PostgreSQL cluster for the service's tests and benchmarks (no banditkit needed).

    python benchmarks/serve/pg_cluster.py start DIR     # prints the URL, e.g.
                                                     # postgresql://bk@127.0.0.1:5433/postgres
    python benchmarks/serve/pg_cluster.py stop DIR

``initdb`` creates the cluster in DIR (trust authentication, superuser ``bk``, listening on
127.0.0.1 only, on a free port); ``pg_ctl`` starts and stops it. PostgreSQL refuses to run as
root, so under root the cluster belongs to the ``postgres`` user (Debian's package creates
it) and the commands run through ``runuser``. The binaries are found on PATH or under
/usr/lib/postgresql/<version>/bin (Debian's ``postgresql`` package).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
from pathlib import Path


class Unavailable(RuntimeError):
    """PostgreSQL cannot be started here (the message says why)."""


def binary(name: str) -> str:
    """The path of a PostgreSQL program (Unavailable when it is not installed)."""
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(
        glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
        key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0,
    )
    if candidates:
        return candidates[-1]
    raise Unavailable(
        f"PostgreSQL is not installed ({name} not found; Debian: apt-get install postgresql)"
    )


def _as_owner(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise Unavailable(
            "running as root and there is no postgres user to own the cluster"
        ) from None
    runuser = shutil.which("runuser")
    if runuser is None:
        raise Unavailable("running as root and runuser is missing")
    return [runuser, "-u", "postgres", "--", *cmd]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(directory: str | os.PathLike[str]) -> str:
    """Create and start a cluster in ``directory`` (created); return its database URL."""
    root = Path(directory)
    data = root / "data"
    root.mkdir(parents=True, exist_ok=True)
    initdb, pg_ctl = binary("initdb"), binary("pg_ctl")
    if os.geteuid() == 0:
        entry = pwd.getpwnam("postgres")
        os.chown(root, entry.pw_uid, entry.pw_gid)
        os.chmod(root, 0o755)
    port = _free_port()
    run = {"check": True, "capture_output": True, "text": True, "cwd": "/"}
    try:
        subprocess.run(
            _as_owner(
                [
                    initdb,
                    "-D",
                    str(data),
                    "-U",
                    "bk",
                    "-A",
                    "trust",
                    "--no-sync",
                    "-E",
                    "UTF8",
                ]
            ),
            **run,
        )  # type: ignore[call-overload]
        options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1"
        subprocess.run(
            _as_owner(
                [
                    pg_ctl,
                    "-D",
                    str(data),
                    "-o",
                    options,
                    "-l",
                    str(root / "server.log"),
                    "-w",
                    "-t",
                    "60",
                    "start",
                ]
            ),
            **run,
        )  # type: ignore[call-overload]
    except subprocess.CalledProcessError as exc:
        raise Unavailable(
            f"PostgreSQL did not start: {(exc.stderr or exc.stdout or '').strip()[-500:]}"
        ) from None
    (root / "url").write_text(f"postgresql://bk@127.0.0.1:{port}/postgres\n")
    return (root / "url").read_text().strip()


def stop(directory: str | os.PathLike[str]) -> None:
    """Stop the cluster in ``directory`` (immediately; it is thrown away)."""
    data = Path(directory) / "data"
    if data.exists():
        subprocess.run(
            _as_owner(
                [binary("pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]
            ),
            capture_output=True,
            cwd="/",
        )


def create_database(url: str, name: str) -> str:
    """Create database ``name`` in the cluster of ``url``; return its URL."""
    import psycopg

    conninfo = url.replace("postgresql://", "postgresql://", 1)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return url.rsplit("/", 1)[0] + f"/{name}"


def main(argv: list[str]) -> int:
    """``start DIR`` (prints the URL) or ``stop DIR``."""
    if len(argv) != 2 or argv[0] not in ("start", "stop"):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        if argv[0] == "start":
            print(start(argv[1]))
        else:
            stop(argv[1])
    except Unavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
