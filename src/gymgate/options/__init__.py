"""Every option and setting of gymgate: declared once, in groups (declared.py, in the shapes of spec.py, read from
text by readers.py), and made into each command's parser, the in-environment entry points' options, a child's
command line and the typed values a command's function takes (machinery.py). Adding an option is one `Option` in
its group (and reading it where it acts)."""

from gymgate.options.declared import (
    BY_NAME,
    CACHE_VAR,
    GROUPS,
    GYM_REPO_VAR,
    JUDGED_COMMANDS,
    LAUNCHER,
    OPTIONS,
    PYTHON_BUILD,
    PYTHON_BUILDS,
    PYTHON_DOWNLOADS,
    RUNS_VAR,
    SETTINGS,
    VARIABLES,
)
from gymgate.options.machinery import (
    add_session_options,
    add_to,
    apply_settings,
    bind,
    child_argv,
    default,
    session_options,
    values,
)
from gymgate.options.readers import env_names
from gymgate.options.shapes import SESSION, UP, Group, Option, Variable

__all__ = [
    "BY_NAME",
    "CACHE_VAR",
    "GROUPS",
    "GYM_REPO_VAR",
    "JUDGED_COMMANDS",
    "LAUNCHER",
    "PYTHON_BUILD",
    "PYTHON_BUILDS",
    "PYTHON_DOWNLOADS",
    "OPTIONS",
    "RUNS_VAR",
    "SESSION",
    "SETTINGS",
    "UP",
    "VARIABLES",
    "Group",
    "Option",
    "Variable",
    "add_session_options",
    "add_to",
    "apply_settings",
    "bind",
    "child_argv",
    "default",
    "env_names",
    "session_options",
    "values",
]
