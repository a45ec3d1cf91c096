"""The parts every policy family composes: history, models, scorer, selection, schedules.

history       parts.history (rows, pairs, sets)
model         parts.models (one Model protocol: ridge, GLM MLE, neural networks)
uncertainty   linalg Gram matrices (one GramLike interface) and weighted norms
scorer        parts.scorer (a model + an uncertainty: means and widths)
selection     parts.selection (arm, top-K set, pair rules)
schedule      parts.schedules (periodic, static grid, determinant doubling)
warm-up       parts.warmup (G-optimal design pulls before the first fit)
composed      parts.scored (the shared act/update loop of scored policies)
"""
