"""Gym under RL's load: an environment's replayable paths rolled out concurrently, in GRPO groups, at a sweep of
levels in flight, the model answering after a declared latency; each rollout held to the same path run alone, and
Gym's cost (CPU, memory, descriptors, processes, throughput, latency, event-loop lag, scaling) measured on baseline and
candidate at once, then judged against reviewed thresholds.

In the pin's environment: `driver` (one ref's rounds) behind `worker` (its command loop). In the harness: `child`
(a ref's worker process), `interleave` (both refs, each round on both at once), `judge` (the verdict), `report`."""
