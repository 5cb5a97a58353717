"""gymgate used from an RL repository: `gymgate init` writes what that repository keeps of gymgate."""
