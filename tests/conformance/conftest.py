"""The conformance test's option: which NeMo RL checkout gymgate's consumer is compared with. Registered here, so
it exists when pytest is given this folder (or a file in it): `pytest tests/conformance --rl-repo ../RL`."""

from __future__ import annotations


def pytest_addoption(parser) -> None:
    parser.addoption(
        "--rl-repo",
        default=None,
        help="a NeMo RL checkout to compare gymgate's consumer with, value for value (or $GYMGATE_RL_REPO); "
        "without either, the conformance test is skipped",
    )
