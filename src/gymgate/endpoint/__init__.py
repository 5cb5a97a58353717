"""Where the model endpoint lives: the byte-level tokenizer, the scripted turns and the deterministic OpenAI-compatible server."""

POLICY_MODEL = "gymgate-policy"  # the model name RL serves and Gym is told to request (policy_model_name)
# The key a load run (gymgate.load) tags each concurrent rollout's row with, in `responses_create_params.metadata`:
# Gym passes the row's metadata through to every policy request of the rollout, so the endpoint answers each request
# from its own rollout's script (endpoint/server.py).
ROLLOUT_TAG = "gymgate_rollout"
