"""Forking Gym servers from a pre-imported parent (issue 29): the zygote, and the client a server venv runs."""
