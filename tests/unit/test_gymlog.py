"""What a failed start-up says: the line that says why leads, Ray's wrapper does not, gymgate's own set-up gaps
are blamed on gymgate, and causes that differ only in ids group together."""

from __future__ import annotations

from gymgate.compare.runs import root_causes
from gymgate.outcomes import GYM
from gymgate.services import gymlog
from gymgate.text import mask_volatile
from tests.helpers import record

UV_NO_PYTHON = """\
Starting `mcqa_environment_server` from venv /runs/x/venvs/environment_servers/legacy_agent/.venv
(mcqa_environment_server) error: No interpreter found for Python 3.13.15 in managed installations or search path
(mcqa_environment_server)
(mcqa_environment_server) hint: A managed Python download is available for Python 3.13.15, but Python downloads are set to 'never'
"""
UV_OFFLINE = """\
(code_gen_environment_server) Using CPython 3.13.15
(code_gen_environment_server)   × No solution found when resolving: `pip`
(code_gen_environment_server)   ╰─▶ Because pip was not found in the cache and the network was disabled, we can conclude that all versions of pip cannot be used.
"""
SERVER_TRACEBACK = """\
(policy_model) Traceback (most recent call last):
(policy_model)   File "app.py", line 3, in <module>
(policy_model) RuntimeError: model server refuses to import
Found ulimit of %s and failed to automatically increase with error %s.
"""


def _log(tmp_path, text):
    log = tmp_path / "mcqa.log"
    log.write_text(text)
    return log


def test_uv_errors_are_found_in_a_server_prefixed_log(tmp_path):
    assert gymlog.setup_gap(_log(tmp_path, UV_NO_PYTHON)) == (
        "uv: No interpreter found for Python 3.13.15 in managed installations or search path"
    )
    assert gymlog.setup_gap(_log(tmp_path, UV_OFFLINE)) == (
        "uv: No solution found when resolving: `pip`: Because pip was not found in the cache and the network was "
        "disabled, we can conclude that all versions of pip cannot be used."
    )
    assert gymlog.setup_gap(_log(tmp_path, SERVER_TRACEBACK)) == ""


def test_a_servers_own_traceback_leads_even_when_prefixed(tmp_path):
    assert gymlog.last_error(_log(tmp_path, SERVER_TRACEBACK)) == "RuntimeError: model server refuses to import"


def test_an_interrupt_from_gyms_own_stop_does_not_hide_the_error_that_caused_it(tmp_path):
    stopped = (
        SERVER_TRACEBACK
        + """\
(mcqa_simple_agent) Traceback (most recent call last):
(mcqa_simple_agent)   File "app.py", line 1, in <module>
(mcqa_simple_agent) KeyboardInterrupt
"""
    )
    assert gymlog.last_error(_log(tmp_path, stopped)) == "RuntimeError: model server refuses to import"
    only = 'Traceback (most recent call last):\n  File "app.py", line 1, in <module>\nKeyboardInterrupt\n'
    assert gymlog.last_error(_log(tmp_path, only)) == "KeyboardInterrupt"


# What a SIGINT that lands while pydantic-core builds a model's serializer prints (measured in a pin's env).
WRAPPED_INTERRUPT = """\
(policy_model) Traceback (most recent call last):
(policy_model)   File "app.py", line 9, in <module>
(policy_model) pydantic_core._pydantic_core.SchemaError: Error building `definitions` serializer:
(policy_model)   SchemaError: Error building `model` serializer:
(policy_model)   SchemaError: Field `y`:
(policy_model)   SchemaError: Error building `literal` serializer:
(policy_model)   KeyboardInterrupt:
"""


def test_an_interrupt_wrapped_in_another_error_is_still_gyms_stop(tmp_path):
    # Gym's stop caught a neighbour mid-import: the error that made Gym stop stays the cause, whichever comes last.
    assert gymlog.last_error(_log(tmp_path, SERVER_TRACEBACK + WRAPPED_INTERRUPT)) == (
        "RuntimeError: model server refuses to import"
    )
    assert gymlog.last_error(_log(tmp_path, WRAPPED_INTERRUPT)).startswith("pydantic_core._pydantic_core.SchemaError")
    # A SchemaError of its own (not an interrupt) is a cause like any other.
    own = WRAPPED_INTERRUPT.replace("KeyboardInterrupt:", "Slots Error: ref 'x' not found")
    assert gymlog.last_error(_log(tmp_path, SERVER_TRACEBACK + own)).startswith("pydantic_core._pydantic_core")


def test_what_gym_prints_after_announcing_its_stop_is_a_consequence(tmp_path):
    # Seen in CI: a neighbour's wrapped interrupt whose `KeyboardInterrupt:` line never reached the log intact (its
    # lines interleaved with another server's) — printed after Gym announced the stop, it is not the cause.
    cut = WRAPPED_INTERRUPT.replace("serializer", "validator").replace("(policy_model)   KeyboardInterrupt:\n", "")
    stopped = SERVER_TRACEBACK + "Sending interrupt signals to servers...\nWaiting for processes to finish...\n" + cut
    assert gymlog.last_error(_log(tmp_path, stopped)) == "RuntimeError: model server refuses to import"
    # Without the announcement, the last error leads as before; after it, with nothing before, it is the cause.
    assert gymlog.last_error(_log(tmp_path, SERVER_TRACEBACK + cut)).startswith("pydantic_core._pydantic_core")
    late = "Sending interrupt signals to servers...\n" + cut
    assert gymlog.last_error(_log(tmp_path, late)).startswith("pydantic_core._pydantic_core")
    # An interrupt anywhere in the message (not only its last line) is Gym's stop.
    mid = WRAPPED_INTERRUPT.replace(
        "(policy_model)   KeyboardInterrupt:\n", "(policy_model)   KeyboardInterrupt:\n(policy_model)   more\n"
    )
    assert gymlog.last_error(_log(tmp_path, SERVER_TRACEBACK + mid)) == "RuntimeError: model server refuses to import"


# A SIGINT that lands while a library's optional import falls back (`try: import brotli` / `except ImportError:
# import brotlicffi`): Python prints the chain, the interrupt last (seen in a neighbour's log during Gym's stop).
def _chained(*closing: str, joint: str = "During handling of the above exception, another exception occurred:") -> str:
    tracebacks = [
        f'Traceback (most recent call last):\n  File "compression.py", line {i}\n{line}'
        for i, line in enumerate(closing)
    ]
    text = f"\n\n{joint}\n\n".join(tracebacks) + "\n"
    return "".join(f"(mcqa_simple_agent) {line}".rstrip() + "\n" for line in text.splitlines())


BROTLI = ("ModuleNotFoundError: No module named 'brotli'", "ModuleNotFoundError: No module named 'brotlicffi'")
CHAINED_INTERRUPT = _chained(*BROTLI, "KeyboardInterrupt")


def test_an_interrupt_that_ends_a_chain_makes_the_whole_chain_gyms_stop(tmp_path):
    # The error that made Gym stop stays the cause, before or after the neighbour's chain.
    cause = "RuntimeError: model server refuses to import"
    assert gymlog.last_error(_log(tmp_path, SERVER_TRACEBACK + CHAINED_INTERRUPT)) == cause
    assert gymlog.last_error(_log(tmp_path, CHAINED_INTERRUPT + SERVER_TRACEBACK)) == cause
    assert gymlog.last_error(_log(tmp_path, CHAINED_INTERRUPT)) == "KeyboardInterrupt"
    # A chain that ends in an error of its own: its last exception is the cause, not the one it was handling.
    own = _chained(*BROTLI, "OSError: disk full")
    assert gymlog.last_error(_log(tmp_path, SERVER_TRACEBACK + own)) == "OSError: disk full"
    direct = _chained(
        *BROTLI, "OSError: disk full", joint="The above exception was the direct cause of the following exception:"
    )
    assert gymlog.last_error(_log(tmp_path, direct + SERVER_TRACEBACK)) == cause


def test_causes_that_differ_only_in_ids_group_together():
    a = "startup: RayTaskError(RuntimeError): ray::GymActor._spinup() (pid=7995, ip=127.0.0.1, actor_id=1807a3fe3b762c2ab1f0)"
    b = "startup: RayTaskError(RuntimeError): ray::GymActor._spinup() (pid=8123, ip=127.0.0.1, actor_id=99aa3fe3b7f2c2ab1f0c)"
    assert mask_volatile(a) == mask_volatile(b)
    c = "startup: no answer from mcqa at 127.0.0.1:22825 (run deadbeef1234)"
    d = "startup: no answer from mcqa at 127.0.0.1:31002 (run 0badcafe9876)"
    assert root_causes(record("mcqa:accepted", "ERROR", reason=c, blame=GYM)) == root_causes(
        record("code_gen:accepted", "ERROR", reason=d, blame=GYM)
    )
    assert mask_volatile("ModuleNotFoundError: No module named 'x'") == "ModuleNotFoundError: No module named 'x'"
