"""Measuring the judge against a person's labels: ``ghostrun calibrate`` (DESIGN §5, §7).

    _cases        the labels file: one case a line, what an assertion asks and the answer
    _statistics   agreement with the labels: accuracy, FAIL precision and recall, kappa
    _experiment   grading every case at every vote count, repeats, the negation check
    _summary      the figures kept for judged failures (``calibration/judges.json``)
    _export       cached verdicts written out as cases for a person to label
    _correction   TPR, TNR and the judge-corrected pass rate (Rogan-Gladen, a seeded bootstrap)
    _against      two judges compared on the suite's cached criteria: kappa, disagreements
    _render       a run's figures as a table, Markdown or JSON

A semantic assertion is only as trustworthy as its judge. Each case is graded
at each vote count, ``repeats`` times, through `_verdicts.grade`: the key rules
and modes of the assertions, so a second run sends nothing and ``replay``
works offline. Gradings live under ``<cassette_dir>/calibration/judge/``, apart
from the tests' own verdicts (``check`` and ``prune`` never touch them), and
each run's figures are kept in ``<cassette_dir>/calibration/judges.json``:
with ``configure(min_judge_kappa=...)`` or ``GHOSTRUN_MIN_JUDGE_KAPPA``, a
judged failure says so when its judge agreed with the labels less than that.

FAIL is the positive class of precision and recall: tests exist to catch failures.
"""
