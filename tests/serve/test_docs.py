"""docs/serve.md's examples run as written: its config, its Python client, its table of counts."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from banditkit.serve import load_config

from .conftest import Live, open_service

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "serve.md").read_text()


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE, flags=re.S)


def test_the_quick_start_config_and_client(tmp_path, monkeypatch, capsys):
    config = yaml.safe_load(blocks("yaml")[0])
    service = open_service(config, f"sqlite:///{tmp_path / 'events.db'}")
    monkeypatch.setenv("REC_TOKEN", "doc-token")
    with Live(service, {"rec": "doc-token"}) as live:
        monkeypatch.setenv("BANDITKIT_URL", live.url)
        (code,) = blocks("python")
        exec(compile(code, "docs/serve.md", "exec"), {})
        status = service.states["rec"].status()
    action, propensity, duplicate = capsys.readouterr().out.split()
    assert int(action) in (0, 1, 2)
    assert duplicate == "False" and 0 < float(propensity) <= 1
    assert (status["decisions"], status["feedbacks"], status["updates"]) == (1, 1, 1)
    shown = re.search(r'# \{"id": "rec", (.*?)\}', PAGE, flags=re.S).group(1)
    keys = re.findall(r'"(\w+)":', shown)
    assert set(keys) | {"id"} == set(status)  # the page lists every count


def test_the_configuration_table_lists_every_field():
    config = load_config(yaml.safe_load(blocks("yaml")[0]))
    fields = set(type(config.policies[0]).model_fields)
    table = PAGE.split("## Configuration")[1].split("## Design")[0]
    documented = set(re.findall(r"^\| `(\w+)`", table, flags=re.M))
    documented |= set(re.findall(r"^\| `\w+`, `(\w+)`", table, flags=re.M))
    assert fields == documented
