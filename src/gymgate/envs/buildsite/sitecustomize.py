"""Loaded (through PYTHONPATH) by the Python processes `uv sync` starts, i.e. the build backend building an
editable Gym tree. It makes `os.path.realpath` remember its answers for the life of that process, and nothing else.

Why: setuptools' editable wheel checks every pair of discovered packages for nesting, resolving both paths each time
(`editable_wheel._remove_nested`); Gym's namespace-package discovery finds ~700 packages, so one build resolves
~240,000 paths (~5 s of the ~6 s build here). A path's real path does not change while a build runs (nothing it
resolves is a symbolic link it creates), so the wheel is byte-for-byte the one built without this
(tests/integration/test_git_ref.py builds it both ways and compares). The interpreter's own sitecustomize, if
any, is still loaded, and this folder leaves sys.path so the build sees the path it would have seen.
"""

import contextlib
import functools
import os
import posixpath
import sys

_here = os.path.dirname(os.path.abspath(__file__))
posixpath.realpath = os.path.realpath = functools.lru_cache(maxsize=None)(posixpath.realpath)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
del sys.modules[__name__]
with contextlib.suppress(ImportError):
    import sitecustomize  # noqa: F401  (the interpreter's own, now that this one is out of the way)
