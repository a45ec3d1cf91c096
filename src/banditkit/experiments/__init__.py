"""Experiments: configs, runner, backends, result store, summaries, figures, reports, tuning.

One module per concern (docs/experiments.md describes the whole platform):

    schema     the YAML config and its validation (ConfigError names file, field, problem)
    resolve    defaults made explicit, names checked, runs expanded, run ids
    execute    one run in a worker: build, simulate, package (single-threaded)
    backends   serial, process pool, Ray
    store      the output directory, written atomically; resume and failure records
    summaries  statistics over seeds and summary.json
    metrics    per-round metrics for figures, pluggable per family or environment kind
    plots      figures (PNG and SVG)
    claims     declarative checks of a paper's statements
    reports    report.md
    tuning     grid search on tuning seeds, tuned.yaml
    papers     ``reproduce``: the packaged configs of papers/<paper>/
    bench      ``banditkit bench``: the repository's benchmarks/ scripts (resumable)
    examples   ``banditkit examples``: the shipped example configs and scripts
    runner     run_experiment: everything above in order
    tidy       load_runs: stored runs as one pandas DataFrame; the stored experiment
"""

from banditkit.experiments.metrics import METRICS, Metric, register_metric
from banditkit.experiments.runner import ExperimentResult, run_experiment
from banditkit.experiments.schema import ConfigError, ExperimentConfig, load_config
from banditkit.experiments.store import OutputDirError
from banditkit.experiments.tidy import load_runs

__all__ = [
    "METRICS",
    "ConfigError",
    "ExperimentConfig",
    "ExperimentResult",
    "Metric",
    "OutputDirError",
    "load_config",
    "load_runs",
    "register_metric",
    "run_experiment",
]
