"""The plan stage: from the resolved experiment, the runs this call computes, as tasks.

tasks   a run, or the seeds of one configuration computed as one batch
plan    Plan: the distinct runs, those left to compute, their tasks, the backend
"""
