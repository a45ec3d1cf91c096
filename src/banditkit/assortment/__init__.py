"""Static multinomial-logit (MNL) assortment optimisation, exact and vectorised.

Given item utilities ``u_i`` (weights ``v_i = exp(u_i)``), revenues ``r_i >= 0``, an
outside option of weight ``v_0`` and a capacity ``K``, :func:`optimal_assortment` returns a
set ``S`` with ``|S| <= K`` maximising the expected revenue
``R(S) = sum_{i in S} r_i v_i / (v_0 + sum_{j in S} v_j)``, exactly. See docs/assortment.md.

Example:
    >>> import banditkit as bk
    >>> items, revenue = bk.assortment.optimal_assortment(
    ...     [0.0, 0.0, 0.0], [1.0, 2.0, 3.0], capacity=2
    ... )
    >>> items, round(revenue, 4)
    ((1, 2), 1.6667)
"""

from banditkit.assortment.model import (
    Assortment,
    choice_probabilities,
    expected_revenue,
)
from banditkit.assortment.solvers import (
    METHODS,
    optimal_assortment,
    revenue_ordered_assortment,
)

__all__ = [
    "METHODS",
    "Assortment",
    "choice_probabilities",
    "expected_revenue",
    "optimal_assortment",
    "revenue_ordered_assortment",
]
