"""The report stage: figures, ``report.md`` and the command line's tables, from stored results.

drawing    what every figure shares: colours, a curve with its band, saving
layouts    multi-panel figures laid out like a paper's (``layout:``)
figures    every figure of an experiment (plot_experiment)
markdown   report.md: results, metric and claims tables
console    the same numbers cut to fit 100 columns
"""
