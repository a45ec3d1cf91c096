"""Linear contextual bandits with rare parameter updates [Yu2026] and the batched baselines.

    grids        the static update grids (``update_grid``), computed from T before the run
    base         the grid policy, the elimination cascades, the near-G-optimal draw
    elimination  the nested cascade of BLCE-G / BLCE / BGLE, stacked once per interval,
                 exact, with the quadratic forms of a level skipped when it removes no arm
    blce         BLCE-G (``blce-g``) and BLCE (``blce``)
    bgle         BGLE (``bgle``) and B-GLinCB (``b-glincb``), logistic rewards
    baselines    RS-OFUL (``rs-oful``), BatchLinUCB-DG (``batchlinucb-dg``), BatchLearning
                 (``batch-learning``), SoftBatch (``softbatch``)

References:
    [Yu2026] S. Yu, M. Oh. Practical and optimal algorithm for linear contextual bandits
        with rare parameter updates. arXiv:2606.00984.
    [Ruan2021] Y. Ruan, J. Yang, Y. Zhou. Linear bandits with limited adaptivity and
        learning distributional optimal design. STOC 2021.
    [Hanna2023] O. Hanna, L. Yang, C. Fragouli. Efficient batched algorithm for contextual
        linear bandits with large action space via soft elimination. NeurIPS 2023.
    [Zhang2025] Z. Zhang, X. Ji, Y. Zhou. Almost optimal batch-regret tradeoff for batch
        linear contextual bandits. ICLR 2025.
"""

from banditkit.policies.rare.baselines import (
    RSOFUL,
    BatchLearning,
    BatchLinUCBDG,
    SoftBatch,
)
from banditkit.policies.rare.bgle import BGLE, BGLinCB, bglincb_warmup
from banditkit.policies.rare.blce import BLCE, BLCEG, phase_counts
from banditkit.policies.rare.grids import (
    GRIDS,
    check_grid,
    loglog,
    phase_scale,
    update_grid,
)

__all__ = [
    "BGLE",
    "BLCE",
    "BLCEG",
    "GRIDS",
    "RSOFUL",
    "BGLinCB",
    "BatchLearning",
    "BatchLinUCBDG",
    "SoftBatch",
    "bglincb_warmup",
    "check_grid",
    "loglog",
    "phase_counts",
    "phase_scale",
    "update_grid",
]
