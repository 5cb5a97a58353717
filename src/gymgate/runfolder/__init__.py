"""The run folder: the one contract between the harness and the in-environment session.

`folder.RunFolder` names, reads and writes every file of a run (layout in folder.py's docstring);
`record.PathRecord` is the typed record of one path; `status.EnvStatus` and `status.WorkerRecord` those of the
session's live state (services/<env>.json, workers/<worker>.json). Nothing else opens a run folder's files.
"""

from gymgate.runfolder.folder import FINISHED_STATUSES, SCHEMA, RunFolder, RunMark, new_run_id, runs_dir, write_crash
from gymgate.runfolder.record import NO_RECORD_REASON, NOT_FINISHED, Failure, PathRecord
from gymgate.runfolder.status import EnvStatus, WorkerRecord

__all__ = [
    "FINISHED_STATUSES",
    "NOT_FINISHED",
    "NO_RECORD_REASON",
    "SCHEMA",
    "EnvStatus",
    "Failure",
    "PathRecord",
    "RunFolder",
    "RunMark",
    "WorkerRecord",
    "new_run_id",
    "runs_dir",
    "write_crash",
]
