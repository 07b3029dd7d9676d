"""The judge: asking a model for a verdict, caching it, calibrating it (DESIGN §5).

    _judges       the judges (Ollama, OpenAI-compatible, a callable) and their protocol
    _named        a judge named by a string: where its key may go, where its code may not
    _verdicts     cached verdicts: keys, files, modes
    _criteria     what each judged assertion asks the judge
    _script       what a plain script does when the judge is away
    _calibration/ grading labelled cases: the labels file, agreement, the run, the summary

May import: `_core`, `_wire`, `_secrets`, `_store`, `_recording`.
"""
