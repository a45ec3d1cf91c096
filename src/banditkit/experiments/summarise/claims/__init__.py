"""Claims decided on a summary: the numbers of each claim, its verdict, its paired evidence.

    rows       a claim's numbers read from ``summary.json`` result rows
    evidence   paired per-seed differences for the claims that compare policies
    decide     each claim PASS or FAIL with its evidence (``evaluate_claims``)

The claim kinds a config may state are ``config.claims``.
"""
