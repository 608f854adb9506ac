# SPDX-License-Identifier: MIT
"""The report's sections for the seed papers, one module per paper: the paper's own
figures (quoted for comparison), the rows and plots that reproduce its tables and
figures from the results, its section of the page and the verdicts on its claims.
heapkit/report.py puts the sections on the page and the judges in ``CLAIM_JUDGES``."""
