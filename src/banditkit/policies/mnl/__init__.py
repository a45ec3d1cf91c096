"""MNL assortment bandits: ONL-MNL and its baselines [Hwang2025] (docs/mnl.md).

onl-mnl          ONL-MNL, non-linear utilities (policies.mnl.onl)
ucb-mnl          UCB-MNL, linear utilities (policies.mnl.linear)
ts-mnl           TS-MNL, linear utilities (policies.mnl.linear)
ofu-mnl-plus     OFU-MNL+, linear utilities, online mirror descent (policies.mnl.linear)
eps-greedy-mnl   epsilon-greedy-MNL with a utility network (policies.mnl.greedy)
"""

from banditkit.policies.mnl.greedy import EpsGreedyMNL
from banditkit.policies.mnl.linear import TSMNL, UCBMNL, OFUMNLPlus
from banditkit.policies.mnl.onl import ONLMNL

__all__ = ["ONLMNL", "TSMNL", "UCBMNL", "EpsGreedyMNL", "OFUMNLPlus"]
