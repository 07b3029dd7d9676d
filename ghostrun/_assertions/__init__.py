"""Assertions on a model's output: ``expect(...)`` and ``expect_tool_calls(...)``.

    _expect       deterministic and judged checks on text
    _tool_calls   checks on the tool calls of an SDK response
    _trajectory   checks on a session's whole run: its tool calls, steps, answer and goal
    _outcome      the one exit of every check: reported to the run log, raised if failed
    _extract      the text and the tool calls of any SDK's response object
    _schema       a small JSON-schema check, for ``is_valid_json(schema=...)``

May import: `_core`, `_wire`, `_secrets`, `_store`, `_recording`, `_judging`.
"""
