"""The append-only event log and the snapshots, in SQLite or PostgreSQL (SQLAlchemy Core).

Four tables:

    bk_events     seq (the log position, assigned by the single writer), policy, kind
                  ("decision" or "feedback"), event_id, ts (seconds since the epoch), payload
                  (JSON), data (a decision's context: the arms, then the revenues if any, as
                  little-endian float64, row after row; its shape is in the payload);
                  (policy, kind, event_id) is unique, so a feedback can be logged once per
                  decision whatever happens in memory
    bk_snapshots  policy, seq (the last event the state includes), ts, meta (JSON), state
                  (the policy's ``.bk`` file, see ``banditkit.save_policy``; empty when
                  the file was stored in parts)
    bk_snapshot_parts  policy, seq, part, data: a large snapshot's file in pieces, written
                  over several of the writer's commits before its ``bk_snapshots`` row
    bk_policies   id, the model definition (JSON) the log was written under

SQLite runs in WAL mode with ``synchronous=FULL`` by default: a commit returns once the log is
on disk, and readers (``serve export``, ``evaluate``) do not block the writer. PostgreSQL
commits are durable with its default ``synchronous_commit=on``. A ``postgresql://`` URL uses
psycopg (version 3).

Database URLs are never printed with their password (:func:`redact`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

from banditkit.core.errors import BanditkitError

__all__ = [
    "DatabaseError",
    "Event",
    "EventLog",
    "Snapshot",
    "SnapshotPart",
    "describe",
    "redact",
]


class DatabaseError(BanditkitError, RuntimeError):
    """The database cannot be opened, or holds no (or another) service log."""


def describe(exc: BaseException) -> str:
    """A database error in one line: the driver's message, without SQL, parameters or password."""
    text = str(getattr(exc, "orig", None) or exc).strip()
    return redact(text.splitlines()[0] if text else type(exc).__name__)


def redact(text: str) -> str:
    """``text`` with the password of every database URL in it replaced by ``***``.

    Example:
        >>> redact("postgresql://bk:s3cret@db:5432/bk failed")
        'postgresql://bk:***@db:5432/bk failed'
    """
    return re.sub(r"(\b[a-z][a-z0-9+.-]*://[^:/@\s]*:)[^@\s]*@", r"\1***@", text)


def _tables() -> Any:
    import sqlalchemy as sa

    metadata = sa.MetaData()
    seq_type = sa.BigInteger().with_variant(sa.Integer(), "sqlite")  # rowid on SQLite
    sa.Table(
        "bk_events",
        metadata,
        sa.Column("seq", seq_type, primary_key=True, autoincrement=False),
        sa.Column("policy", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("event_id", sa.String(128), nullable=False),
        sa.Column("ts", sa.Double(), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=True),
        sa.UniqueConstraint("policy", "kind", "event_id", name="bk_events_once"),
        sa.Index("bk_events_policy_seq", "policy", "seq"),
    )
    sa.Table(
        "bk_snapshots",
        metadata,
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("policy", sa.String(64), nullable=False, index=True),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("ts", sa.Double(), nullable=False),
        sa.Column("meta", sa.Text(), nullable=False),
        sa.Column("state", sa.LargeBinary(), nullable=False),
    )
    sa.Table(
        "bk_snapshot_parts",
        metadata,
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("policy", sa.String(64), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("part", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Index("bk_snapshot_parts_policy_seq", "policy", "seq"),
    )
    sa.Table(
        "bk_policies",
        metadata,
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("definition", sa.Text(), nullable=False),
        sa.Column("ts", sa.Double(), nullable=False),
    )
    return metadata


def _engine(url: str, synchronous: str) -> Any:
    import sqlalchemy as sa

    try:
        parsed = sa.engine.make_url(url)
    except sa.exc.ArgumentError:
        raise DatabaseError(
            f"--db must be a database URL such as sqlite:///events.db or "
            f"postgresql://user@host/db; got {redact(url)!r}."
        ) from None
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.get_backend_name() == "sqlite":
        if parsed.database in (None, "", ":memory:"):
            raise DatabaseError(
                "--db: an in-memory SQLite database would lose every event; give a file, "
                "sqlite:///events.db."
            )
        engine = sa.create_engine(parsed, poolclass=sa.pool.NullPool)

        @sa.event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            cursor = dbapi_conn.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute(f"PRAGMA synchronous={synchronous.upper()}")
            cursor.execute("PRAGMA busy_timeout=10000")
            cursor.close()

        return engine
    return sa.create_engine(parsed, pool_pre_ping=True)


class Event(NamedTuple):
    """One logged event (a row of ``bk_events``, its payload decoded)."""

    seq: int
    kind: str
    event_id: str
    ts: float
    payload: Any
    data: bytes | None


class Snapshot(NamedTuple):
    """A policy's serialised state after event ``seq`` (a row of ``bk_snapshots``).

    ``state`` is empty when the file went to ``bk_snapshot_parts`` first.
    """

    policy: str
    seq: int
    ts: float
    meta: dict[str, Any]
    state: bytes


class SnapshotPart(NamedTuple):
    """Bytes ``part`` (0, 1, ...) of the snapshot of ``policy`` after event ``seq``."""

    policy: str
    seq: int
    part: int
    data: bytes


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), allow_nan=False)


class EventLog:
    """One connection to the service's database: the writer's, or a reader's.

    Args:
        url: A SQLAlchemy database URL (``sqlite:///events.db``,
            ``postgresql://user:password@host/db``).
        create: Create the tables when missing (the service); readers pass False and get
            a :class:`DatabaseError` on a database without a service log.
        synchronous: SQLite's ``synchronous`` pragma, "full" (default) or "normal".

    Raises:
        DatabaseError: The database cannot be reached or holds no log (``create=False``);
            the message shows the URL without its password.
    """

    def __init__(
        self, url: str, *, create: bool = True, synchronous: str = "full"
    ) -> None:
        import sqlalchemy as sa

        self.url = redact(url)
        self._sa = sa
        self._meta = _tables()
        self.events = self._meta.tables["bk_events"]
        self.snapshots = self._meta.tables["bk_snapshots"]
        self.parts = self._meta.tables["bk_snapshot_parts"]
        self.policies = self._meta.tables["bk_policies"]
        e = self.events
        self._select = sa.select(
            e.c.seq, e.c.kind, e.c.event_id, e.c.ts, e.c.payload, e.c.data
        )
        self._find = self._select.where(
            e.c.policy == sa.bindparam("p"),
            e.c.kind == sa.bindparam("k"),
            e.c.event_id.in_(sa.bindparam("ids", expanding=True)),
        )
        self._engine = _engine(url, synchronous)
        # the insert of every group, compiled once for the driver (the hot path)
        insert = self.events.insert().compile(dialect=self._engine.dialect)
        self._insert_sql = str(insert)
        self._insert_keys = insert.positiontup  # None for named parameter styles
        self._pipelined = self._engine.dialect.driver == "psycopg"
        self._dbapi_error = getattr(self._engine.dialect.dbapi, "Error", Exception)
        try:
            if create:
                self._meta.create_all(self._engine)
            self.conn = self._engine.connect()
            if create and self._pipelined:
                self._store_snapshots_uncompressed()
            if not create and not sa.inspect(self.conn).has_table("bk_events"):
                self.conn.close()
                raise DatabaseError(f"{self.url} holds no banditkit service log.")
        except sa.exc.SQLAlchemyError as exc:
            self._engine.dispose()
            raise DatabaseError(f"cannot open {self.url}: {describe(exc)}") from None

    def _store_snapshots_uncompressed(self) -> None:
        """PostgreSQL: keep snapshots out of line without trying to compress them.

        A ``.bk`` file barely compresses, and PostgreSQL's attempt (pglz, by default) cost
        the database server about 100 ms of CPU per 6 MB snapshot, taken from the writer.
        """
        for table, column in (("bk_snapshots", "state"), ("bk_snapshot_parts", "data")):
            storage = self.conn.exec_driver_sql(
                "SELECT attstorage FROM pg_attribute "
                f"WHERE attrelid = '{table}'::regclass AND attname = '{column}'"
            ).scalar()
            if storage != "e":
                self.conn.exec_driver_sql(
                    f"ALTER TABLE {table} ALTER COLUMN {column} SET STORAGE EXTERNAL"
                )
        self.conn.commit()

    def close(self) -> None:
        """Close the connection and the engine."""
        self.conn.close()
        self._engine.dispose()

    # ------------------------------------------------------------------ writing
    def append(
        self,
        rows: Sequence[dict[str, Any]],
        snapshots: Sequence[Snapshot] = (),
        parts: Sequence[SnapshotPart] = (),
    ) -> None:
        """Insert events (dicts of the columns; payload JSON-able, data bytes) and commit.

        One transaction for the whole group: one sync to disk for every event in it.
        Snapshot ``parts`` and ``snapshots`` are stored in the same transaction (each policy
        keeps its last two snapshots): the writer's one connection writes everything, so
        a snapshot never waits for SQLite's write lock nor makes the events wait for it.
        """
        if (
            self._pipelined
            and rows
            and not snapshots
            and not parts
            and not self.conn.in_transaction()
        ):
            raw = self.conn.connection.driver_connection
            if raw.info.transaction_status == 0:  # idle: the BEGIN can be ours
                self._append_pipelined(raw, rows)
                return
        try:
            self._insert(rows)
            if parts:
                self._store_parts(parts)
            for snapshot in snapshots:
                self._store(snapshot)
            self.conn.commit()
        except Exception:
            self.conn.rollback()
            raise

    def _append_pipelined(self, raw: Any, rows: Sequence[dict[str, Any]]) -> None:
        """PostgreSQL: BEGIN, the inserts and COMMIT sent at once, one round trip.

        psycopg would otherwise wait for each: BEGIN, the batch, then COMMIT. The commit
        is as durable (``synchronous_commit``); an error rolls the whole group back.
        """
        raw.autocommit = True  # the BEGIN is ours, in the pipeline
        try:
            with raw.pipeline(), raw.cursor() as cursor:
                cursor.execute("BEGIN")
                cursor.executemany(self._insert_sql, self._params(rows))
                cursor.execute("COMMIT")
        except Exception as exc:
            if raw.info.transaction_status != 0:  # not idle: roll back what is open
                raw.execute("ROLLBACK")
            raise self._sa.exc.DBAPIError.instance(
                self._insert_sql, None, exc, self._dbapi_error
            ) from exc
        finally:
            raw.autocommit = False

    def _insert(self, rows: Sequence[dict[str, Any]]) -> None:
        if rows:
            self.conn.exec_driver_sql(self._insert_sql, self._params(rows))

    def _params(self, rows: Sequence[dict[str, Any]]) -> list[Any]:
        """The driver's parameters of ``rows`` (payloads as JSON text)."""
        keys = self._insert_keys
        return [
            {**r, "payload": _dumps(r["payload"])}
            if keys is None
            else tuple(_dumps(r[k]) if k == "payload" else r[k] for k in keys)
            for r in rows
        ]

    def end_read(self) -> None:
        """End the current read transaction (lets SQLite checkpoint its WAL)."""
        self.conn.rollback()

    def _store_parts(self, parts: Sequence[SnapshotPart]) -> None:
        """Insert snapshot parts; a first part drops what a stopped service left of it."""
        table = self.parts
        for p in parts:
            if p.part == 0:
                self.conn.execute(
                    table.delete().where(
                        table.c.policy == p.policy, table.c.seq == p.seq
                    )
                )
        self.conn.execute(table.insert(), [p._asdict() for p in parts])

    def _store(self, snapshot: Snapshot) -> None:
        """Insert a snapshot; drop that policy's older ones but the previous one.

        Parts of dropped snapshots go too: the parts older than the newest kept snapshot
        that belong to neither kept one. Newer parts are kept: they belong to the next
        snapshot, whose first parts may share this commit (the writer stores snapshots in
        the order of their seq). Parts a stopped service left without a snapshot are
        dropped when the next service opens the log (:meth:`drop_orphan_parts`).
        """
        sa = self._sa
        snaps, parts = self.snapshots, self.parts
        policy = snapshot.policy
        row = {**snapshot._asdict(), "meta": _dumps(snapshot.meta)}
        self.conn.execute(snaps.insert().values(**row))
        keep = (
            sa.select(snaps.c.id, snaps.c.seq)
            .where(snaps.c.policy == policy)
            .order_by(snaps.c.seq.desc(), snaps.c.id.desc())
            .limit(2)
        )
        kept = self.conn.execute(keep).all()
        self.conn.execute(
            snaps.delete().where(
                snaps.c.policy == policy, snaps.c.id.not_in([r[0] for r in kept])
            )
        )
        self.conn.execute(
            parts.delete().where(
                parts.c.policy == policy,
                parts.c.seq.not_in([r[1] for r in kept]),
                parts.c.seq < max(r[1] for r in kept),
            )
        )

    def drop_orphan_parts(self) -> int:
        """Drop the snapshot parts without their snapshot (a stopped writer's), and commit.

        For the writer when it opens the log, before it stores anything: then no snapshot
        is being written, so every part without its row was left by a service stopped
        while it wrote one. Returns how many were dropped.
        """
        snaps, parts = self.snapshots, self.parts
        stored = self._sa.select(snaps.c.seq).where(snaps.c.policy == parts.c.policy)
        result = self.conn.execute(parts.delete().where(parts.c.seq.not_in(stored)))
        self.conn.commit()
        return int(result.rowcount or 0)

    def register(self, policy: str, definition: dict[str, Any], ts: float) -> None:
        """Record a policy's model definition (first run only)."""
        self.conn.execute(
            self.policies.insert().values(
                id=policy, definition=_dumps(definition), ts=ts
            )
        )
        self.conn.commit()

    # ------------------------------------------------------------------ reading
    def definition(self, policy: str) -> dict[str, Any] | None:
        """The stored model definition of ``policy`` (None: never served here)."""
        p = self.policies
        row = self.conn.execute(
            self._sa.select(p.c.definition).where(p.c.id == policy)
        ).first()
        return None if row is None else json.loads(row[0])

    def policy_ids(self) -> list[str]:
        """The ids of every policy this database has served."""
        p = self.policies
        query = self._sa.select(p.c.id).order_by(p.c.id)
        return [r[0] for r in self.conn.execute(query)]

    def last(self) -> tuple[int, float]:
        """(seq, ts) of the last logged event; (0, 0.0) for an empty log."""
        e = self.events
        row = self.conn.execute(
            self._sa.select(e.c.seq, e.c.ts).order_by(e.c.seq.desc()).limit(1)
        ).first()
        return (0, 0.0) if row is None else (int(row[0]), float(row[1]))

    def find(self, policy: str, kind: str, event_id: str) -> Event | None:
        """The event ``kind`` of ``event_id``, or None."""
        found = self.find_many(policy, kind, [event_id])
        return found.get(event_id)

    def find_many(
        self, policy: str, kind: str, event_ids: Sequence[str]
    ) -> dict[str, Event]:
        """The ``kind`` events of these ids that the log holds, by id (one query)."""
        rows = self.conn.execute(
            self._find, {"p": policy, "k": kind, "ids": list(event_ids)}
        )
        return {r[2]: _event(r) for r in rows}

    def read(
        self, policy: str, after: int = 0, *, through: int | None = None
    ) -> Iterator[Event]:
        """``policy``'s events after position ``after`` (to ``through``), in log order."""
        e = self.events
        query = self._select.where(e.c.policy == policy, e.c.seq > after).order_by(
            e.c.seq
        )
        if through is not None:
            query = query.where(e.c.seq <= through)
        result = self.conn.execute(query, execution_options={"yield_per": 2000})
        for row in result:
            yield _event(row)

    def ids(
        self, policy: str, kind: str, low: int, high: int
    ) -> list[tuple[str, int, float]]:
        """(event_id, seq, ts) of ``kind`` events of ``policy`` with low <= seq <= high."""
        e = self.events
        rows = self.conn.execute(
            self._sa.select(e.c.event_id, e.c.seq, e.c.ts)
            .where(
                e.c.policy == policy,
                e.c.kind == kind,
                e.c.seq >= low,
                e.c.seq <= high,
            )
            .order_by(e.c.seq)
        )
        return [(r[0], int(r[1]), float(r[2])) for r in rows]

    def latest_snapshot(self, policy: str) -> tuple[int, dict[str, Any], bytes] | None:
        """(seq, meta, state) of ``policy``'s latest snapshot, or None."""
        return next(iter(self.snapshots_of(policy)), None)

    def snapshots_of(self, policy: str) -> list[tuple[int, dict[str, Any], bytes]]:
        """(seq, meta, state) of each stored snapshot of ``policy``, the newest first."""
        s, p = self.snapshots, self.parts
        rows = self.conn.execute(
            self._sa.select(s.c.seq, s.c.meta, s.c.state)
            .where(s.c.policy == policy)
            .order_by(s.c.seq.desc(), s.c.id.desc())
        ).all()
        found = []
        for row in rows:
            seq, state = int(row[0]), bytes(row[2])
            if not state:  # stored in parts
                pieces = self.conn.execute(
                    self._sa.select(p.c.data)
                    .where(p.c.policy == policy, p.c.seq == seq)
                    .order_by(p.c.part)
                )
                state = b"".join(bytes(r[0]) for r in pieces)
            found.append((seq, json.loads(row[1]), state))
        return found


def _event(row: Any) -> Event:
    seq, kind, event_id, ts, payload, data = row
    return Event(
        int(seq),
        kind,
        event_id,
        float(ts),
        json.loads(payload),
        None if data is None else bytes(data),
    )
