"""The summarise stage: statistics over seeds and the claims decided, as ``summary.json``.

stats      Student-t intervals, curve bands, per-metric statistics
summary    summarise: the summary.json mapping of an experiment's stored runs
claims     the config's claims decided on the summary, with paired evidence
"""
