"""Where results become reports: summaries of one run (and, later, comparisons of two)."""
