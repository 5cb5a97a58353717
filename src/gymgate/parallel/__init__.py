"""Where paths fan out: which worker runs which environment, the xdist scheduler that honours it, the
run's shared Ray cluster, and the live progress view the harness draws from the run folder."""
