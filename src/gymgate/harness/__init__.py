"""Where refs are run through the acceptance matrix: one run (run.py), reruns of what did not pass
(reruns.py), and a bump judged end to end against its baseline (bump.py)."""
