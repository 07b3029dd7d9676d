"""How long a replay miss takes to reach the caller, through each real SDK.

    python benchmarks/miss_latency.py

Records one prompt per SDK against the loopback simulator, then replays a
one-word change with each SDK's default retry settings and prints the time
until `CacheMiss` arrives (client construction included). anthropic and groq
retry any ``Exception`` from the transport with backoff; a miss must not be one.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import sdk_calls
from simulator import ProviderSimulator

import ghostrun

SDKS = {
    "openai": sdk_calls.openai_chat,
    "anthropic": sdk_calls.anthropic_chat,
    "groq": sdk_calls.groq_chat,
    "ollama": sdk_calls.ollama_chat,
}


def main() -> None:
    cassettes = tempfile.mkdtemp(prefix="ghostrun-miss-")
    with ProviderSimulator() as provider:
        with ghostrun.session(cassette_dir=cassettes, hosts=["127.0.0.1"]):
            for call in SDKS.values():
                call(provider.base_url, "Where is my refund? It went back on Monday.")
        for name, call in SDKS.items():
            started = time.perf_counter()
            try:
                with ghostrun.session(cassette_dir=cassettes, hosts=["127.0.0.1"], mode="replay"):
                    call(provider.base_url, "Where is my refund? It went back on Tuesday.")
            except ghostrun.CacheMiss:
                print(f"{name:<10} CacheMiss after {(time.perf_counter() - started) * 1000:.0f} ms")
            else:
                raise SystemExit(f"{name}: the changed prompt did not miss")
        served = provider.served
    print(f"simulator served {served} requests (the recordings only)")


if __name__ == "__main__":
    main()
