"""Experiments: a YAML config to runs, results on disk, summaries, figures and reports.

The pipeline's stages, in order (docs/experiments.md describes the whole platform; each
stage takes and returns one object):

    config     the config read, checked and resolved     -> ResolvedExperiment
    plan       the runs to compute, as tasks               -> Plan
    compute    the tasks on a backend                      -> RunRecord per run
    store      runs written atomically, read back          -> CellRuns per cell
    summarise  statistics over seeds, claims decided       -> summary.json
    report     figures, report.md, the command line's tables

    runner     run_experiment: the stages in order (``banditkit run``)
    tuning     tune: a grid on tuning seeds, tuned.yaml (``banditkit tune``)
    reproduce  a paper's configs (``papers/``) run and reported (``banditkit reproduce``)
    bench      ``banditkit bench`` (the repository's benchmarks/); examples: ``banditkit examples``
"""

from banditkit.experiments.config.errors import ConfigError
from banditkit.experiments.config.load import load_config
from banditkit.experiments.config.metrics import METRICS, Metric, register_metric
from banditkit.experiments.config.schema import ExperimentConfig
from banditkit.experiments.runner import ExperimentResult, run_experiment
from banditkit.experiments.store.store import OutputDirError
from banditkit.experiments.store.tidy import load_runs

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
