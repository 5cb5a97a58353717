"""Where the model endpoint lives: the byte-level tokenizer, the scripted turns and the deterministic OpenAI-compatible server."""
