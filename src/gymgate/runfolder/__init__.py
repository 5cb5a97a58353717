"""The run folder: the one contract between the harness and the in-environment session.

`folder.RunFolder` names, reads and writes every file of a run (layout in folder.py's docstring);
`record.PathRecord` is the typed record of one path. Nothing else opens a run folder's files.
"""

from gymgate.runfolder.folder import FINISHED_STATUSES, SCHEMA, RunFolder, RunMark, new_run_id, runs_dir, write_crash
from gymgate.runfolder.record import NO_RECORD, NOT_FINISHED, Failure, PathRecord

__all__ = [
    "FINISHED_STATUSES",
    "NOT_FINISHED",
    "NO_RECORD",
    "SCHEMA",
    "Failure",
    "PathRecord",
    "RunFolder",
    "RunMark",
    "new_run_id",
    "runs_dir",
    "write_crash",
]
