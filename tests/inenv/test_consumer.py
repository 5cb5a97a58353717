"""The RL consumer boundary in isolation: dataset, processor/collate, overrides, accumulator,
postprocess (continuity, NaN, no-generation) and the final batch. Fault cases use plain dicts."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from gymgate.consumer import errors
from gymgate.consumer.batch import final_batch
from gymgate.consumer.dataset import load_rows, task_name_for
from gymgate.consumer.postprocess import postprocess_result
from gymgate.consumer.processor import collate, process_datum, repeat_interleave
from gymgate.consumer.rollout import GenerationConfig, StreamAccumulator, prepare_rows
from gymgate.rl.profile import load as load_profile


class CountingTokenizer:
    pad_token_id = 0

    def __init__(self):
        self.calls = 0

    def batch_decode(self, batches):
        self.calls += 1
        return [",".join(map(str, ids)) for ids in batches]


def item(kind, prompt, gen, lps=None, **extra):
    return {
        "type": kind,
        "prompt_token_ids": prompt,
        "generation_token_ids": gen,
        "generation_log_probs": lps if lps is not None else [-0.5] * len(gen),
        **extra,
    }


def gym_result(*items, reward=1.0, **extra):
    return {"response": {"output": list(items)}, "reward": reward, **extra}


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/data/workplace_assistant/train.jsonl", "workplace_assistant-train"),
        ("data/mcqa/example.jsonl", "mcqa-example"),
        ("/x/v1.2/train.jsonl", "v1"),
        ("train.jsonl", "train"),
    ],
)
def test_task_name_follows_nemo_rl(path, name):
    assert task_name_for(path) == name


def test_rows_are_raw_lines_with_newlines_and_blank_lines_kept(tmp_path):
    data = tmp_path / "mcqa" / "example.jsonl"
    data.parent.mkdir()
    data.write_text('{"a": 1}\n\n{"b": 2}\n')
    rows = load_rows(data)
    assert rows == [
        {"extra_env_info": '{"a": 1}\n', "task_name": "mcqa-example"},
        {"extra_env_info": "\n", "task_name": "mcqa-example"},
        {"extra_env_info": '{"b": 2}\n', "task_name": "mcqa-example"},
    ]


def test_processor_placeholder_and_collate():
    spec = process_datum({"extra_env_info": '{"responses_create_params": {"input": "q"}}\n', "task_name": "t"}, 3)
    assert spec["length"] == 0 and spec["idx"] == 3 and spec["loss_multiplier"] == 1.0
    assert spec["message_log"][0]["role"] == "user" and spec["message_log"][0]["token_ids"].size == 0
    batch = collate([spec, spec])
    assert batch["length"].tolist() == [0, 0] and batch["stop_strings"] == [None, None]
    repeated = repeat_interleave(batch, 2)
    assert len(repeated["extra_env_info"]) == 4
    repeated["extra_env_info"][0]["x"] = 1
    assert "x" not in repeated["extra_env_info"][1]  # each generation owns its row


def test_overrides_are_applied_in_place():
    rows = [
        {"responses_create_params": {"max_output_tokens": 9000, "temperature": 1.0}},
        {"responses_create_params": {}},
        {"responses_create_params": {"max_output_tokens": 10}},
    ]
    prepare_rows(rows, GenerationConfig(max_new_tokens=4096, temperature=0.7, top_p=0.95))
    assert [r["responses_create_params"]["max_output_tokens"] for r in rows] == [4096, 4096, 10]
    assert all(r["responses_create_params"]["temperature"] == 0.7 for r in rows)
    assert all(r["responses_create_params"]["top_p"] == 0.95 for r in rows)
    assert [r["_rowidx"] for r in rows] == [0, 1, 2]
    with pytest.raises(TypeError, match="responses_create_params dict"):
        prepare_rows([{"responses_create_params": None}], GenerationConfig(1, 0.7, 0.95))


def test_accumulator_rejects_bad_duplicate_and_missing_indices():
    rows = [{"agent_ref": {"name": "a"}}] * 3
    acc = StreamAccumulator(rows)
    for bad, message in (("1", "must be an int"), (True, "must be an int"), (3, "out of range"), (-1, "out of range")):
        with pytest.raises(errors.RowIndexError, match=message):
            acc.add(bad, {})
    acc.add(0, {"r": 0})
    with pytest.raises(errors.RowIndexError, match="duplicate row index 0"):
        acc.add(0, {})
    acc.add(2, {"r": 2})
    with pytest.raises(errors.RowIndexError, match=r"returned 2 of 3 rollouts: missing row indices \[1\]"):
        acc.finish()
    mixed = StreamAccumulator([{"agent_ref": {"name": "a"}}, {"agent_ref": {"name": "b"}}])
    mixed.add(0, {})
    mixed.add(1, {})
    with pytest.raises(errors.RowIndexError, match="one NeMo-Gym agent per prompt group"):
        mixed.finish()


def test_postprocess_slices_new_prompt_tokens_per_turn():
    tok = CountingTokenizer()
    result = gym_result(
        {"type": "function_call_output", "output": "x"},
        item("function_call", ["1", "2"], ["3"]),  # 0.2.x sends ids as strings
        item(
            "message",
            [1, 2, 3, 4, 5],
            [6, 7],
            routed_experts=None,
            content=[{"type": "output_text", "text": "<think>x</think> <tool_call>"}],
        ),
    )
    out = postprocess_result(result, tok)
    log = out["message_log"]
    assert [m["role"] for m in log] == ["user", "assistant", "user", "assistant"]
    assert [m["token_ids"].tolist() for m in log] == [[1, 2], [3], [4, 5], [6, 7]]
    assert log[1]["token_ids"].dtype == np.int64 and log[1]["generation_logprobs"].dtype == np.float32
    assert (log[3]["is_invalid_tool_call"], log[3]["has_malformed_thinking"]) == (True, True)
    assert (log[1]["is_invalid_tool_call"], log[1]["has_malformed_thinking"]) == (False, False)
    assert out["input_message_log"][0] is log[0]
    assert tok.calls == 2  # one batch_decode over prompts, one over generations
    last = result["response"]["output"][2]
    assert "generation_token_ids" not in last and "routed_experts" not in last
    assert (last["prompt_str"], last["generation_str"]) == ("1,2,3,4,5", "6,7")
    assert out["wire"]["generation_token_id_types"] == ["int", "str"]
    assert "routed_experts" in out["wire"]["trainable_item_keys"]


def test_continuity_violation_names_turn_and_position():
    result = gym_result(item("message", [1, 2], [3]), item("message", [1, 2, 9, 4], [5]))
    with pytest.raises(errors.NonContiguousError) as info:
        postprocess_result(result, CountingTokenizer())
    assert (info.value.turn, info.value.position) == (1, 2)
    assert str(info.value).startswith("Non-contiguous messages found at turn 1")
    assert pickle.loads(pickle.dumps(info.value)).position == 2


def test_nan_logprobs_and_missing_generation_data_are_errors():
    with pytest.raises(errors.NaNLogprobs):
        postprocess_result(gym_result(item("message", [1], [2], lps=[math.nan])), CountingTokenizer())
    with pytest.raises(errors.NoGenerationData, match="no generation data"):
        postprocess_result(gym_result(item("message", [1], [])), CountingTokenizer())
    with pytest.raises(errors.RolloutDataFailure, match="non-successful response"):
        postprocess_result("Internal Server Error", CountingTokenizer())
    bare = gym_result(item("message", [1], [2]))
    del bare["response"]["output"][0]["generation_log_probs"]
    with pytest.raises(KeyError):
        postprocess_result(bare, CountingTokenizer())


def test_errors_survive_pickling():
    for exc in (
        errors.GymTransportError("x"),
        errors.RolloutDataFailure("y"),
        errors.RowIndexError("z"),
        errors.NonContiguousError("m", 1, 2),
    ):
        copy = pickle.loads(pickle.dumps(exc))
        assert type(copy) is type(exc) and str(copy) == str(exc)


def _processed(prompt, gen, reward=1.0, **extra):
    return postprocess_result(gym_result(item("message", prompt, gen), reward=reward, **extra), CountingTokenizer())


def test_final_batch_fields_and_metrics():
    rows = [{"agent_ref": {"name": "a"}}, {"agent_ref": {"name": "a"}}]
    results = [_processed([1, 2, 3], [4], reward=1.0), _processed([1, 2], [3, 4, 5], reward=0.0)]
    batch, metrics = final_batch(rows, results, np.ones(2, dtype=np.float32), pad_token_id=0, max_total_len=5)
    assert batch["length"].tolist() == [3, 2]
    assert batch["total_reward"].tolist() == [1.0, 0.0]
    assert batch["truncated"].tolist() == [False, True]  # exactly the engine max length
    assert batch["input_ids"].tolist() == [[1, 2, 3], [1, 2, 0]]
    assert metrics["turns_per_sample/mean"] == 1.0 and metrics["truncation_rate"] == 0.5
    assert metrics["a/reward/mean"] == 0.5
    # RL's sample stddev (ddof=1), its histogram's values and the three percentiles it logs.
    assert metrics["a/reward/stddev"] == pytest.approx(0.7071067811865476)
    assert metrics["a/reward/histogram"] == [1.0, 0.0]
    assert metrics["turns_per_sample/p95"] == 1.0 and metrics["turns_per_sample/p99"] == 1.0
    assert metrics["max_gen_tokens_per_turn/p95"] == 3.0
    # RL writes the row's agent_ref onto the outer result; full_result stays what Gym returned.
    assert results[0]["agent_ref"] == {"name": "a"} and "agent_ref" not in results[0]["full_result"]


def test_one_sample_metrics_are_rls_nan_stddev_and_the_mean_divides_by_the_group():
    rows = [{"agent_ref": {"name": "a"}}, {"agent_ref": {"name": "a"}}]
    # Only the first result has a numeric `score`: RL's mean divides by both samples, its stddev of one is NaN.
    results = [_processed([1], [2], reward=1.0, score=0.8, _rowidx=0), _processed([1], [2], reward=1.0, _rowidx=1)]
    _, metrics = final_batch(rows, results, np.ones(2), 0, 100)
    assert metrics["a/score/mean"] == pytest.approx(0.4)
    assert math.isnan(metrics["a/score/stddev"]) and metrics["a/score/histogram"] == [0.8]
    assert metrics["a/_rowidx/max"] == 1.0  # RL logs `_`-prefixed numeric keys too
    _, one = final_batch(rows[:1], results[:1], np.ones(1), 0, 100)
    assert math.isnan(one["a/reward/stddev"]) and one["a/reward/mean"] == 1.0


def test_mask_sample_is_read_where_the_profiles_rl_reads_it_and_the_loss_multiplier_is_left_to_grpo():
    rows = [{"agent_ref": {"name": "a"}}] * 3
    results = [
        _processed([1], [2], instance_config={"mask_sample": True}),
        _processed([1], [2], mask_sample=True),  # Gym 0.7.0's top-level field: RL reads it from RL#4061 on
        _processed([1], [2], instance_config=None),
    ]
    for name, masked in (("7ea279ab", [True, False, False]), ("pr4061", [True, True, False])):
        batch, _ = final_batch(rows, results, np.ones(3, dtype=np.float32), 0, 100, load_profile(name))
        assert batch["mask_sample"].tolist() == masked
        # RL's rollout returns the rows' multiplier as it was given; GRPO zeroes a masked one later.
        assert batch["loss_multiplier"].tolist() == [1.0, 1.0, 1.0]


def test_a_result_gym_failed_to_judge_is_rejected_only_by_a_profile_whose_rl_rejects_it():
    from gymgate.consumer.errors import RejectedResult
    from gymgate.consumer.rollout import reject_failed

    failed = [{"full_result": {"reward": 0.0, "_ng_failure_class": "judge_failed"}}]
    reject_failed(failed, load_profile("7ea279ab"))  # trained on (and failed by the checks)
    with pytest.raises(RejectedResult, match="judge_failed.*as a transport failure"):
        reject_failed(failed, load_profile("pr4061"))
    reject_failed([{"full_result": {"reward": 1.0}}], load_profile("pr4061"))


def test_reward_components_must_sum_and_task_indices_agree():
    rows = [{"agent_ref": {"name": "a"}}]
    bad = [_processed([1], [2], reward=1.0, reward_components={"x": 0.5, "y": 0.2})]
    with pytest.raises(ValueError, match="sum of reward_components"):
        final_batch(rows, bad, np.ones(1), 0, 100)
    good = [_processed([1], [2], reward=0.7, reward_components={"x": 0.5, "y": 0.2})]
    batch, _ = final_batch(rows, good, np.ones(1), 0, 100)
    assert batch["reward/x"].tolist() == [0.5]
    # An empty reward_components is a single-reward result to RL: no columns, nothing to sum.
    batch, _ = final_batch(rows, [_processed([1], [2], reward=1.0, reward_components={})], np.ones(1), 0, 100)
    assert not [k for k in batch if k.startswith("reward/")]
    two = [{"_ng_task_index": 0, "agent_ref": {"name": "a"}}, {"_ng_task_index": 1, "agent_ref": {"name": "a"}}]
    with pytest.raises(ValueError, match="_ng_task_index"):
        final_batch(two, [_processed([1], [2]), _processed([1], [2])], np.ones(2), 0, 100)


def test_a_load_rounds_groups_go_through_rls_grpo_repeat():
    """gymgate.load batches a round's GRPO groups as RL does: each distinct row processed once, then repeated, each
    generation its own copy (a rollout's tag written into one never reaches another)."""
    from gymgate.load.driver import grpo_batch  # noqa: PLC0415 - this test only

    one = {"extra_env_info": '{"responses_create_params": {"input": "x"}}\n', "task_name": "t"}
    other = {"extra_env_info": '{"responses_create_params": {"input": "y"}}\n', "task_name": "t"}
    batch = grpo_batch([one] * 4 + [other] * 4)
    rows = batch["extra_env_info"]
    assert [r["responses_create_params"]["input"] for r in rows] == ["x"] * 4 + ["y"] * 4
    rows[0]["responses_create_params"]["metadata"] = {"gymgate_rollout": "a"}
    assert "metadata" not in rows[1]["responses_create_params"]
    assert len(batch["message_log"]) == 8 and batch["loss_multiplier"].shape == (8,)
    assert len(grpo_batch([one, other])["extra_env_info"]) == 2  # not whole groups: each row as it comes


def test_a_run_failure_without_a_status_is_transport_where_rls_taxonomy_says_so():
    """RL counts a dropped connection, a cut body or a timeout as infrastructure (by class, along the causes); any
    other status-less failure is the row's data."""

    class ClientPayloadError(Exception):  # aiohttp's name: matched by name, as RL's fallback does
        pass

    caused = RuntimeError("wrapped")
    caused.__cause__ = ConnectionResetError("peer reset")
    for exc in (TimeoutError("slow"), ClientPayloadError("cut"), caused):
        assert isinstance(errors.run_failure(exc), errors.GymTransportError), exc
    assert isinstance(errors.run_failure(ValueError("bad row")), errors.RolloutDataFailure)


def test_the_task_index_rule_and_the_tables_json_are_rls():
    from gymgate.consumer.batch import full_result_tables, task_index_rule

    task_index_rule([{"_ng_task_index": 3}, {"_ng_task_index": "3"}])
    task_index_rule([{}, {"_ng_task_index": 1}])  # the first row carries none: no rule
    with pytest.raises(ValueError, match="different _ng_task_index"):
        task_index_rule([{"_ng_task_index": 3}, {}])  # a row without one, after a first with one
    rows = [{"agent_ref": {"name": "a"}}]
    assert full_result_tables(rows, [{"full_result": {"reward": 1.0, "x": [1, 2]}}]) == {
        "a": ['{"reward":1.0,"x":[1,2]}']
    }


def test_a_batch_whose_results_trickle_in_still_meets_its_deadline(monkeypatch):
    """A Gym that serializes answers one rollout at a time, each within the poll: the batch's deadline still holds
    (it was only checked while nothing came, so a serialized candidate held a load round for minutes)."""
    import sys  # noqa: PLC0415 - this test only
    import time  # noqa: PLC0415 - this test only
    from types import SimpleNamespace  # noqa: PLC0415 - this test only

    from gymgate.consumer import rollout  # noqa: PLC0415 - this test only
    from gymgate.consumer.errors import RolloutTimeout  # noqa: PLC0415 - this test only

    class Trickle:
        cancelled = False

        def is_finished(self):
            return False

        def __next__(self):
            time.sleep(0.02)
            return "ref"

    fake_ray = SimpleNamespace(wait=lambda refs, timeout: (refs, []), cancel=lambda s: setattr(s, "cancelled", True))
    monkeypatch.setitem(sys.modules, "ray", fake_ray)
    stream = Trickle()
    began = time.monotonic()
    with pytest.raises(RolloutTimeout, match="within 0.3 s"):
        for _ in rollout._bounded(stream, began, 0.3, None, "a test's deadline"):
            pass
    assert stream.cancelled and time.monotonic() - began < 2
