"""Neural logistic bandits [Bae2025] and the linear logistic baselines of its Sec. 7.

NeuralLog-UCB-1/2, NeuralLog-TS-1/2 and NCBF-UCB (``neurallog``), Logistic-UCB-1 and
ada-OFU-ECOLog (``logistic``).

References:
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
"""

from banditkit.policies.logistic.logistic import AdaOFUECOLog, LogisticUCB1
from banditkit.policies.logistic.neurallog import (
    NCBFUCB,
    NeuralLogTS1,
    NeuralLogTS2,
    NeuralLogUCB1,
    NeuralLogUCB2,
)

__all__ = [
    "NCBFUCB",
    "AdaOFUECOLog",
    "LogisticUCB1",
    "NeuralLogTS1",
    "NeuralLogTS2",
    "NeuralLogUCB1",
    "NeuralLogUCB2",
]
