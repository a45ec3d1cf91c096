"""The compute stage: the tasks of a plan computed on a backend, one RunRecord per run.

threads    one BLAS and one PyTorch thread per run; worker start-up
execute    one task computed in whichever process: build, simulate, package
schedule   the order in which a pool of workers takes the runs
backends   serial, process pool, Ray
progress   a progress bar or log lines, with an estimate of the time left
"""
