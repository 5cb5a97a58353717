"""Where results become reports: a ref judged alone (summary.py), a comparison (markdown.py, including the
terminal's view; html.py; outputs.py: results.json, junit.xml, retry.txt), the matrix and a bisection. Renderers show
values; they decide nothing (gymgate.verdict does)."""
