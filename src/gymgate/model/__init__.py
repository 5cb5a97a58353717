"""Where the model lives: the byte-level tokenizer and the deterministic OpenAI-compatible endpoint."""
