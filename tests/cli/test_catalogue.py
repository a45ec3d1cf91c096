"""banditkit list, describe and examples: whole text, papers, parameters, suggestions."""

from __future__ import annotations

from typer.testing import CliRunner

from banditkit.cli import app
from banditkit.cli.catalogue import _rows
from tests.experiments.helpers import write_yaml

runner = CliRunner()


def invoke(*args: str, width: int = 100):
    return runner.invoke(
        app, [str(a) for a in args], env={"COLUMNS": str(width)}, catch_exceptions=False
    )


def test_list_policies_shows_family_paper_and_summary():
    output = invoke("list", "policies").output
    lines = output.splitlines()
    (linucb,) = [line for line in lines if line.startswith("linucb ")]
    assert linucb.split()[:3] == ["linucb", "contextual", "Abbasi-Yadkori2011,"]
    assert "LinUCB / OFUL" in linucb
    assert "Zhou2020" in next(line for line in lines if line.startswith("neural-ucb "))
    assert all(len(line) <= 100 for line in lines)
    assert "…" not in output  # wrapped, never cut
    assert "banditkit describe NAME" in output


def test_rows_wrap_the_last_column_and_never_cut():
    text = "word " * 40
    for width in (100, 50, 20):
        lines = _rows([["name", "family", text.strip()]], width)
        assert " ".join(" ".join(lines).split()[2:]) == text.strip()


def test_describe_prints_parameters_defaults_ranges_and_paper_names():
    result = invoke("describe", "LinUCB")
    assert result.exit_code == 0
    out = result.output
    assert out.startswith("linucb: LinUCB / OFUL")
    assert "[Li2010] L. Li, W. Chu" in out
    assert "nu = 1.0; paper: alpha (LinUCB) or sqrt(beta_t) (OFUL)" in out
    assert "Exploration scale, >= 0; 0 is greedy." in out
    neural = invoke("describe", "neurallog-ucb2").output
    assert "nu = None (resolves to 0.1); paper: ν^(2)" in neural
    assert "width = 20; paper: m" in neural
    assert "logistic" in invoke("describe", "logistic").output  # an environment


def test_describe_an_unknown_name_suggests_up_to_five():
    result = invoke("describe", "linucbx")
    assert result.exit_code == 2
    first = result.output.splitlines()[0]
    assert "Did you mean 'linucb'" in first and first.count(",") <= 4 + 1
    assert "banditkit list policies" in result.output
    assert "Traceback" not in result.output


def test_example_descriptions_are_whole_at_any_width():
    from banditkit.experiments.examples import list_examples

    for width in (60, 100, 200):
        output = " ".join(invoke("examples", width=width).output.split())
        for example in list_examples():
            assert example.description in output
        assert "…" not in output


def test_the_run_summary_shows_only_what_the_config_changed(tmp_path):
    config = {
        "name": "changed",
        "horizon": 20,
        "seeds": 1,
        "env": {"name": "logistic", "h": "h1", "d": 3, "n_arms": 3},
        "policies": [
            # every default, some resolved by the practical mode (nu, lr, gram, ...)
            {"name": "neurallog-ucb2", "label": "defaults", "width": 20},
            {"name": "neurallog-ucb2", "label": "changed", "steps": 5},
        ],
    }
    out = tmp_path / "out"
    result = invoke(
        "run", write_yaml(tmp_path / "c.yaml", config), "--out", out,
        "--backend", "serial", "--progress", "none",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = {line.split()[1]: line for line in result.output.splitlines()[1:3]}
    assert rows["defaults"].rstrip().endswith("defaults")
    assert rows["changed"].rstrip().endswith("steps=5")
