"""Claims decided on a summary: the numbers of each claim, its verdict, its paired evidence.

    rows       a claim's numbers read from ``summary.json`` result rows
    evidence   paired per-seed differences for the claims that compare policies
    standing   not decided (a warm-up as long as half the run), indicative or firm
    decide     each claim PASS, FAIL or not decided, with its evidence (``evaluate_claims``)

The claim kinds a config may state are ``config.claims``.
"""
