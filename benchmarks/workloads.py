"""What the workloads send: prompts, sizes and the judge, shared by every process.

Standard library only, so importing it costs a cold-start measurement nothing.
"""

from __future__ import annotations

MODEL = "gpt-4o-mini"
API_KEY = "sk-" + "bench-0000000000000000"  # never sent anywhere but 127.0.0.1
LOOPBACK = ("127.0.0.1",)  # the simulator is not a provider host: sessions add it

# Full sizes (issue 8) and the --quick ones.
SIZES = {
    "full": {"w1": 2000, "w2": 200, "w3": 10_000, "w4": 2000, "w5": 1000},
    "quick": {"w1": 300, "w2": 30, "w3": 10_000, "w4": 300, "w5": 200},
}
STREAM_FILLER_WORDS = (
    194  # + "Echo:", "Stream", "N:" = 197 deltas; + role, finish, [DONE] = 200 events
)
# vcrpy scans its cassette from the start for every call, comparing each
# recorded request with it until one matches and was not played yet: ~300 ms a
# call at 2,000 interactions matching on body. So matching on body it replays
# every 100th prompt (against the full cassette, so the scans average the
# same); with its default matching (the first unplayed interaction) only the
# first 200 calls, whose scans are shorter than the rest's would be.
VCRPY_BODY_SAMPLE = 100
VCRPY_DEFAULT_LIMIT = 200
W5_CRITERION = "the text greets the reader"


def w1_prompt(i: int) -> str:
    return f"Question {i}: which city is the capital of country number {i}?"


def w2_prompt(i: int) -> str:
    return f"Stream {i}: " + " ".join(["word"] * STREAM_FILLER_WORDS)


def expected_reply(prompt: str) -> str:
    """The simulator answers ``Echo: <last user text>``: each reply names its prompt."""
    return f"Echo: {prompt}"


def w5_text(i: int) -> str:
    return f"Hello reader number {i}, and welcome to the benchmark."


def bench_judge(text: str, criterion: str) -> tuple[bool, str]:
    """The judge that seeds the verdict cache (auto mode); replay never calls it."""
    return True, "ok"


def expect_function() -> object:
    """``ghostrun.expect`` (from its module while the package does not export it yet)."""
    import ghostrun

    found = getattr(ghostrun, "expect", None)
    if found is None:
        from ghostrun._assertions._expect import expect as found
    return found
