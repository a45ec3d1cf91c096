"""The store stage: an output directory written atomically, and read back without classes.

tables     a run's columns and their Arrow types; records as stored files keep them
store      RunStore: the directory, its lock, each run's table and metadata
stored     config.yaml and cells.json: the experiment of a directory, read back
runs       the finished runs of every cell (CellRuns)
tidy       load_runs: the stored runs as one pandas DataFrame
"""
