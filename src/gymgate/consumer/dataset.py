"""Gym JSONL rows as NeMo RL's NemoGymDataset reads them: one raw line per datum, never parsed here."""

from __future__ import annotations

from pathlib import Path


def task_name_for(path: str | Path) -> str:
    """Last two path components joined with '-', cut at the first '.', leading '-' dropped."""
    parts = str(path).split("/")
    name = "-".join(parts[-2:]).split(".", 1)[0]
    return name.lstrip("-")


def load_rows(path: str | Path, repeat: int = 1) -> list[dict[str, str]]:
    """Rows with exactly two string columns: the raw line (newline kept) and the file's task name."""
    text = Path(path).read_text()
    lines = text.splitlines(keepends=True)
    task = task_name_for(path)
    rows = [{"extra_env_info": line, "task_name": task} for line in lines]
    return rows * repeat
