"""The RL consumer boundary, re-implemented after NeMo RL's contract: dataset -> processor/collate ->
sync rollout driver (streaming from the Gym actor) -> postprocess -> final batch. Arrays are numpy
(int64 token ids, float32 logprobs) where NeMo RL uses torch tensors of the same dtypes and shapes."""
