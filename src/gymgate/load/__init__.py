"""Gym under RL's load: an environment's replayable paths rolled out concurrently, in GRPO groups, at a sweep of
levels in flight; each rollout held to the same path run alone, and Gym's cost (CPU, memory, descriptors, processes,
throughput, latency) measured with baseline and candidate interleaved, then judged against reviewed thresholds.

In the pin's environment: `driver` (one ref's rounds) behind `worker` (its command loop). In the harness: `child`
(a ref's worker process), `interleave` (both refs, round by round), `judge` (the verdict), `report`."""
