"""Where the model endpoint lives: the byte-level tokenizer, the scripted turns and the deterministic OpenAI-compatible server."""

POLICY_MODEL = "gymgate-policy"  # the model name RL serves and Gym is told to request (policy_model_name)
