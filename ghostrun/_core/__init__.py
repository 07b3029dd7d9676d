"""Foundation: the errors, modes and settings, hosts, and safe files on disk.

    _exceptions   every error and warning ghostrun raises
    _modes        the modes and their names (vcrpy's too)
    _config       ``configure()``, the environment, and the mode in force
    _children     children of a replay run are replay runs (the variable they inherit)
    _environ      the environment read where every session reads it, fast
    _project      the project's ``[tool.ghostrun]`` table in pyproject.toml
    _distribution the distribution's name, and the other project named ghostrun
    _hosts        provider hosts and the host patterns sessions add
    _telemetry    URLs that are never recorded (trace uploads)
    _files        atomic writes, JSON in and out, temp and lock file names
    _lock         one cassette's cross-process lock
    _age          a recording's day, ``max_age`` and the clock
    _normalize    value shapes (dates, uuids) replaced for the key and the miss diff
    _words        counting things in a message (``2 tests``)
    _safe_text    untrusted text quoted for a terminal or Markdown, one rule each
    _version      the version
    _public       public names report ``ghostrun`` as their module

May import: nothing of ghostrun's (the standard library and orjson only).
"""
