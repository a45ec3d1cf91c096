"""The radius constants of the NeuralLog family [Bae2025]: ``NeuralLogRadius``.

nu_{t-1} of the bonus (theory: iota_t of Eq. (2) and nu_t of Eqs. (1)/(4); practical:
``theory.practical_nu``) and the round's constants that ``theory_constants`` reports, as a
mixin of ``policies.neurallog_base.NeuralLogPolicy``, which sets the attributes declared
below.

References:
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
"""

from __future__ import annotations

from typing import Any

from banditkit.policies.logistic import theory

__all__ = ["NeuralLogRadius"]


class NeuralLogRadius:
    """nu_{t-1} and the theory constants, from the policy's options and state."""

    delta: float
    C1: float
    C: float
    depth: int
    S: float
    bonus: str | None
    keep_log_factors: bool
    _lam0: float
    _lam_now: float
    history: Any

    @property
    def _theory(self) -> bool:
        raise NotImplementedError

    def _n(self) -> int:
        """Observations so far (t - 1 at selection in round t)."""
        return 0 if not hasattr(self, "history") else self.history.n

    def _iota_t(self, d_eff: float) -> float:
        """iota_t of Eq. (2) with the observations so far."""
        return theory.iota_t(
            d_eff,
            self._n(),
            delta=self.delta,
            C1=self.C1,
            depth=self.depth,
            lam_0=self._lam0,
        )

    def _iota(self, d_eff: float) -> float:
        """nu_{t-1}: theory nu_t of Eqs. (1)/(4), or its practical form (table 2.6).

        Practical: ``theory.practical_nu``, with the log factor l_t when
        ``keep_log_factors``.
        """
        if self._theory:
            return theory.nu_t(
                self._iota_t(d_eff), C=self.C, depth=self.depth, S=self.S
            )
        assert self.bonus is not None  # set in practical mode
        ell = theory.log_factor(self._n(), self.delta) if self.keep_log_factors else 1.0
        return theory.practical_nu(
            d_eff,
            lam=self._lam_now,
            depth=self.depth,
            S=self.S,
            bonus=self.bonus,
            ell=ell,
        )

    def theory_constants(self) -> dict[str, float]:
        """The round's constants: n, D (d_eff), lam0, lam_t, iota_t and nu_t.

        In theory mode these are D_n, lam_n, iota_n and nu_n of Eqs. (1)-(4) with n
        observations so far (the values used to score round n + 1).
        """
        effdim = getattr(self, "effdim", None)
        d_eff = 0.0 if effdim is None else effdim.value
        n, iota = self._n(), self._iota_t(d_eff)
        return {
            "n": float(n),
            "D": d_eff,
            "lam0": self._lam0,
            "lam_t": self._lam_now,
            "iota_t": iota,
            "nu_t": self._iota(d_eff),
        }
