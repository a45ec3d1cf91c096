"""Off-policy evaluation: estimate a policy's value from logs another policy collected.

    ips, snips, direct_method (dm), doubly_robust (dr)   estimators with confidence intervals
    on_policy                                             a log's own mean reward
    cross_fit                                             cross-fitted scikit-learn reward models
    BanditLog, obd_log, read_log                          logs as arrays: of arms, pairs, sets
    log_from_runs                                         a log from banditkit's stored runs
    evaluate, format_estimates, obd_uniform_check         several estimators on one log
    target_probabilities, policy_target, parse_policy    targets: uniform, a file, any policy
    structured_target                                     a dueling or MNL policy on pairs, sets
    evaluate_command                                      what ``banditkit evaluate`` prints

Every estimator takes keyword arrays (``rewards``, ``actions``, ``propensities`` and
``target``, the evaluated policy's (n, K) action probabilities per logged row) and returns an
:class:`Estimate` with ``.value`` and ``.ci``. On a log of duels or assortments (a
``BanditLog`` of kind "pair" or "set"), IPS and SNIPS take ``target_propensities``, the
target's probability of each logged pair or set, instead. See docs/ope.md.

Example:
    >>> import numpy as np
    >>> from banditkit import ope
    >>> e = ope.ips(rewards=[1.0, 0.0, 1.0], actions=[0, 1, 0],
    ...             propensities=[0.5, 0.5, 0.5], target=np.full((3, 2), 0.5))
    >>> round(e.value, 4)
    0.6667
"""

from banditkit.ope.command import evaluate_command
from banditkit.ope.estimators import (
    Estimate,
    direct_method,
    dm,
    doubly_robust,
    dr,
    ips,
    on_policy,
    snips,
)
from banditkit.ope.logs import (
    METHODS,
    BanditLog,
    evaluate,
    format_estimates,
    obd_log,
    obd_uniform_check,
    read_log,
)
from banditkit.ope.reward_model import cross_fit
from banditkit.ope.stored import log_from_runs
from banditkit.ope.targets import (
    parse_policy,
    policy_target,
    structured_target,
    target_probabilities,
)

__all__ = [
    "METHODS",
    "BanditLog",
    "Estimate",
    "cross_fit",
    "direct_method",
    "dm",
    "doubly_robust",
    "dr",
    "evaluate",
    "evaluate_command",
    "format_estimates",
    "ips",
    "log_from_runs",
    "obd_log",
    "obd_uniform_check",
    "on_policy",
    "parse_policy",
    "policy_target",
    "read_log",
    "snips",
    "structured_target",
    "target_probabilities",
]
