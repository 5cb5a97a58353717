"""NeMo RL as gymgate models it: declared profiles of RL revisions (profile.py) and what they change."""
