"""`python -m gymgate.envs.locate REF`: build or reuse REF's environment and print its interpreter path.

Used by the test session to run tests inside a pin's environment; progress goes to stderr.
"""

from __future__ import annotations

import sys

from gymgate.envs.prepare import prepare_env
from gymgate.errors import GymgateError
from gymgate.refs import resolve_ref


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m gymgate.envs.locate REF", file=sys.stderr)
        return 2
    try:
        env = prepare_env(resolve_ref(argv[0]))
    except GymgateError as exc:
        print(f"gymgate: error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(f"environment {env.key} {'built' if env.built else 'reused'} in {env.seconds:.1f}s", file=sys.stderr)
    print(env.python)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
