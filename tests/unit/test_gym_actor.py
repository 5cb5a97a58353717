"""The Gym actor's rollout stream (services/gym_actor.py), with fakes for Gym: it always ends."""

from __future__ import annotations

import threading

from gymgate.services.gym_actor import GymActor


class Consumer:
    def failure(self, exc: BaseException) -> Exception:
        return RuntimeError(f"typed: {exc}")

    def postprocess(self, result: dict) -> dict:
        return dict(result)


def test_a_collection_helper_that_cannot_be_made_ends_the_stream_with_its_error_never_a_wait():
    actor = GymActor.__new__(GymActor)  # no Gym: the actor's state set by hand
    actor.env_name, actor.rh, actor.consumer = "mcqa", object(), Consumer()

    def broken():
        raise ValueError("RolloutCollectionHelper refused its arguments")

    actor._collection_helper = broken
    outcome: list = []

    def consume() -> None:
        try:
            list(actor.run_rollouts([{"_rowidx": 0}]))
        except Exception as exc:  # noqa: BLE001 - the test reads it below
            outcome.append(exc)

    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    thread.join(timeout=10)
    assert not thread.is_alive(), "the stream waited for a result that could never come"
    (error,) = outcome
    assert "typed: RolloutCollectionHelper refused its arguments" in str(error)
