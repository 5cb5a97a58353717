"""gymgate: a hermetic acceptance matrix for NeMo Gym bumps in RL frameworks."""

__version__ = "0.1.0"
