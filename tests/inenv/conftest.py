"""The in-environment tests start Ray clusters of their own (a run's, ray.cluster_utils'): as a run's, they see none
of the user's Ray settings, and Ray's token authentication is off, so that Ray neither reads nor writes the user's
~/.ray/auth_token. Set before any test module imports Ray, which reads them once."""

from __future__ import annotations

import os

from gymgate.processes import RAY_VARIABLES, RUN_ENVIRONMENT

for _name in [name for name in os.environ if name.startswith(RAY_VARIABLES)]:
    del os.environ[_name]
os.environ["RAY_AUTH_MODE"] = RUN_ENVIRONMENT["RAY_AUTH_MODE"]
