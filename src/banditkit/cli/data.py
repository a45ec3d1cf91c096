"""The data commands: datasets (list, verify, path, fetch) and evaluate (off-policy)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from banditkit import datasets as ds
from banditkit.cli.common import (
    EXIT_FAILED,
    EXIT_INVALID,
    _error,
    _invalid,
    app,
)
from banditkit.cli.serve import evaluate_db
from banditkit.core.validation import suggest
from banditkit.experiments.config.load import load_config
from banditkit.ope import evaluate_command


@app.command()
def datasets(
    action: Annotated[
        str,
        typer.Argument(
            help="list (availability), verify (checksums), path, or fetch (download)."
        ),
    ] = "list",
    name: Annotated[
        list[str] | None,
        typer.Argument(
            help="Dataset(s) (default: all, or the data home; fetch: several, or --all)."
        ),
    ] = None,
    all_: Annotated[
        bool, typer.Option("--all", help="fetch: every dataset of the registry.")
    ] = False,
    mirror: Annotated[
        str | None,
        typer.Option(
            "--mirror",
            help="fetch: base URL laid out like the data home that replaces the official "
            "sources (default: $BANDITKIT_MIRROR), e.g. file:///srv/datasets.",
        ),
    ] = None,
) -> None:
    """List datasets, verify their checksums, print their paths, or fetch (download) them."""
    known = ds.list_datasets()
    if action not in ("list", "verify", "path", "fetch"):
        _error(f"unknown action {action!r}; choose list, verify, path or fetch.")
        raise typer.Exit(EXIT_INVALID)
    # "MNIST" is mnist: names are matched ignoring case
    folded = {k.casefold(): k for k in known}
    name = [folded.get(n.casefold(), n) for n in name or []]
    for n in name:
        if n not in known:
            _error(
                f"unknown dataset {n!r}.{suggest(n, known)} Known: {', '.join(known)}."
            )
            raise typer.Exit(EXIT_INVALID)
    if action == "fetch":
        _fetch(name, all_, known, mirror)
        return
    if name is not None and len(name) > 1:
        _error(f"{action}: one dataset at most (got {len(name)}).")
        raise typer.Exit(EXIT_INVALID)
    name_ = name[0] if name else None
    names = [name_] if name_ else known
    {"path": _paths, "list": _list, "verify": _verify}[action](name_, names)


def _fetch(name: list[str], all_: bool, known: list[str], mirror: str | None) -> None:
    """``datasets fetch``: every named dataset (or all), one failure not stopping the rest."""
    if bool(name) == all_:
        _error("fetch: name one or more datasets, or give --all (not both).")
        raise typer.Exit(EXIT_INVALID)
    failed: dict[str, str] = {}
    for n in name or known:  # one failure does not stop the other datasets
        try:
            ds.fetch(n, mirror=mirror, echo=typer.echo)
        except (ds.DatasetNotFoundError, ds.ChecksumError, PermissionError) as exc:
            failed[n] = (str(exc).splitlines() or ["the download failed"])[0]
    if failed:
        first = next(iter(failed.values()))
        more = f"\n  (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        _error(f"could not fetch {', '.join(failed)}: {first}{more}")
        raise typer.Exit(EXIT_INVALID)


def _paths(name_: str | None, names: list[str]) -> None:
    """``datasets path``: the data home, or each dataset's folder."""
    fn = getattr(ds, "dataset_path", None)
    home = getattr(ds, "data_home", None)
    if name_ is None and home is not None:
        typer.echo(str(home()))
    elif fn is not None:
        for n in names:
            typer.echo(f"{n}  {fn(n)}" if name_ is None else str(fn(n)))
    else:
        _error("dataset paths are not available in this version.")
        raise typer.Exit(EXIT_INVALID)


def _list(name_: str | None, names: list[str]) -> None:
    """``datasets list``: availability and files present, per dataset."""
    status = getattr(ds, "dataset_status", None)
    if status is None:
        for n in names:
            typer.echo(n)
        return
    by_name = {st.name: st for st in status()}
    for n in names:  # the same datasets, in the same order, as `datasets verify`
        st = by_name[n]
        state = "available" if st.available else "missing"
        have, total = st.files_present
        typer.echo(f"{st.name:<14} {state:<9} files {have}/{total}  {st.path}")


def _verify(name_: str | None, names: list[str]) -> None:
    """``datasets verify``: checksums per dataset; exit 1 on a mismatch."""
    verify = getattr(ds, "verify_dataset", None)
    if verify is None:
        _error("dataset verification is not available in this version.")
        raise typer.Exit(EXIT_INVALID)
    bad = 0
    for n in names:
        try:
            files = verify(n)
        except Exception as exc:
            bad += 1
            typer.echo(f"{n:<14} FAILED    ({exc})")
            continue
        files = list(files or [])
        states = [getattr(f, "state", "ok") for f in files]
        mismatched = [f for f in files if getattr(f, "verified", None) is False]
        bad += bool(mismatched)
        # "files" counts required files present / known, as `datasets list` does; the
        # states count every file checked, optional description files included
        required = [f for f in files if not getattr(f, "optional", False)]
        present = sum(bool(getattr(f, "present", True)) for f in required)
        summary = ", ".join(f"{s} {states.count(s)}" for s in dict.fromkeys(states))
        typer.echo(
            f"{n:<14} {'MISMATCH' if mismatched else 'ok':<9} files "
            f"{present}/{len(required)}  ({summary or 'embedded'})"
        )
        for f in mismatched:
            typer.echo(f"  checksum mismatch: {f.path}")
    if bad:
        raise typer.Exit(EXIT_FAILED)


TargetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--target",
        help="The policy evaluated (repeat for several): uniform [default]; a policy "
        "NAME[:k=v,...] (linucb:nu=0.5), replayed on the log; an experiment config "
        "(.yaml), each of its policies; or a .npy file of (n, K) action probabilities.",
    ),
]


ActionKindOption = Annotated[
    str,
    typer.Option(
        "--action-kind",
        help="What a log file's action column holds: arm [default], pair (a duel, "
        "'i j') or set (an assortment, '0 3 5').",
    ),
]
FeedbackOption = Annotated[
    str | None,
    typer.Option(
        "--feedback",
        help="A log of pairs or sets: the column a policy target learns from (the duel's "
        "winner, 1 or 0; the chosen item, -1 for none).",
    ),
]
EnvOption = Annotated[
    str | None,
    typer.Option("--env", help="A run directory: the environment (label or name)."),
]


def _targets(targets: list[str] | None) -> list[Any]:
    """The --target values, a config's policies in place of the config (exit 2 if bad)."""
    out: list[Any] = []
    for target in targets or ["uniform"]:
        if Path(target).suffix not in (".yaml", ".yml"):
            out.append(target)
            continue
        config = load_config(target)
        out += [{"name": p.name, "label": p.label, **p.params} for p in config.policies]
    return out


@app.command()
def evaluate(
    log: Annotated[
        Path | None,
        typer.Argument(
            help="A CSV or Parquet log, or a directory of `banditkit run` (its runs of "
            "one policy are the log); the Open Bandit Dataset when left out."
        ),
    ] = None,
    target: TargetOption = None,
    campaign: Annotated[
        str, typer.Option("--campaign", help="OBD campaign: all, men or women.")
    ] = "all",
    reward: Annotated[str, typer.Option("--reward", help="Reward column.")] = "reward",
    action: Annotated[str, typer.Option("--action", help="Action column.")] = "action",
    propensity: Annotated[
        str, typer.Option("--propensity", help="Logged propensity column.")
    ] = "propensity",
    features: Annotated[
        list[str] | None,
        typer.Option(
            "--feature",
            help="Feature column (repeat): the reward model's (dm, dr) and a policy "
            "target's contexts.",
        ),
    ] = None,
    methods: Annotated[
        list[str] | None,
        typer.Option(
            "--method",
            help="ips, snips, dm or dr (repeat; default ips snips dr, or ips snips on a "
            "log without --feature).",
        ),
    ] = None,
    encoding: Annotated[
        str,
        typer.Option(
            "--encoding",
            help="How features become a policy target's arms: block or onehot-id.",
        ),
    ] = "block",
    level: Annotated[
        float, typer.Option("--level", min=0.5, max=0.999, help="Interval coverage.")
    ] = 0.95,
    seed: Annotated[
        int, typer.Option("--seed", min=0, help="Cross-fitting and policy seed.")
    ] = 0,
    db: Annotated[
        str | None,
        typer.Option("--db", help="A decision service's database URL (docs/serve.md)."),
    ] = None,
    policy: Annotated[
        str | None,
        typer.Option(
            "--policy",
            help="--db: the served policy's id; a run directory: the logging policy.",
        ),
    ] = None,
    env: EnvOption = None,
    action_kind: ActionKindOption = "arm",
    capacity: Annotated[
        int | None,
        typer.Option("--capacity", min=1, help="A log of sets: the largest set."),
    ] = None,
    feedback: FeedbackOption = None,
    candidates: Annotated[
        list[str] | None,
        typer.Option("--candidate", help="--db: NAME[:k=v,...] (repeat)."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="--db: report folder [default: evaluate-ID]."),
    ] = None,
) -> None:
    """Off-policy evaluation of target policies on a logged bandit dataset (docs/ope.md)."""
    if db is not None:  # a decision service's own log
        evaluate_db(db, policy, candidates, methods, level, seed, out, log)
        return
    try:
        table = evaluate_command(
            log=log,
            campaign=campaign,
            target=_targets(target),
            reward=reward,
            action=action,
            propensity=propensity,
            features=features,
            methods=methods,
            level=level,
            seed=seed,
            encoding=encoding,
            action_kind=action_kind,
            capacity=capacity,
            feedback=feedback,
            env=env,
            logger=policy,
        )
    except (
        ValueError,
        OSError,
    ) as exc:  # a bad log, target or column: the user's to fix
        raise _invalid(exc) from None
    typer.echo(table)
