"""Tokens per test and per step, and what they cost: for ``review`` and ``report`` (DESIGN §7).

Read from the trajectory files (`_store._trajectory`), whose steps carry the
tokens the provider reported. A price table is optional and the user's own,
never fetched: a JSON file of US dollars per million tokens by model, with
``"*"`` for any model it does not name::

    {"gpt-4o-mini": {"in": 0.15, "out": 0.60}, "*": {"in": 1.0, "out": 4.0}}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

__all__ = ["Prices", "StepTokens", "Usage", "delta", "load_prices", "step_tokens", "usage"]

Prices = Mapping[str, Mapping[str, float]]


@dataclass(frozen=True)
class Usage:
    """Tokens in and out, and their cost when a price table names the model."""

    tokens_in: int
    tokens_out: int
    cost: float | None = None

    def as_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {"in": self.tokens_in, "out": self.tokens_out}
        if self.cost is not None:
            found["cost_usd"] = round(self.cost, 6)
        return found


@dataclass(frozen=True)
class StepTokens:
    """One step's usage before and after (None: the step did not exist, or said nothing)."""

    position: int
    before: Usage | None
    after: Usage | None


def usage(steps: Sequence[Mapping[str, Any]], prices: Prices | None = None) -> Usage | None:
    """The sum over ``steps``; None when no step reported tokens."""
    counted = [_step_usage(step, prices) for step in steps]
    found = [u for u in counted if u is not None]
    if not found:
        return None
    costs = [u.cost for u in found]
    cost = None if None in costs else sum(c for c in costs if c is not None)
    return Usage(sum(u.tokens_in for u in found), sum(u.tokens_out for u in found), cost)


def step_tokens(
    before: Sequence[Mapping[str, Any]],
    after: Sequence[Mapping[str, Any]],
    prices: Prices | None = None,
) -> list[StepTokens]:
    """Each step's usage before and after, for the steps whose usage changed."""
    changed = []
    for index in range(max(len(before), len(after))):
        old = _step_usage(before[index], prices) if index < len(before) else None
        new = _step_usage(after[index], prices) if index < len(after) else None
        if old != new:
            changed.append(StepTokens(index + 1, old, new))
    return changed


def delta(before: Usage | None, after: Usage | None) -> str:
    """``in 120 -> 135 (+15), out 30 -> 28 (-2)``, and the cost likewise when priced."""
    parts = [
        _one("in", before.tokens_in if before else None, after.tokens_in if after else None),
        _one("out", before.tokens_out if before else None, after.tokens_out if after else None),
    ]
    if (before and before.cost is not None) or (after and after.cost is not None):
        was = f"${before.cost:.4f}" if before and before.cost is not None else "-"
        now = f"${after.cost:.4f}" if after and after.cost is not None else "-"
        parts.append(f"cost {was} -> {now}")
    return ", ".join(parts)


def _one(label: str, was: int | None, now: int | None) -> str:
    if was is None:
        return f"{label} - -> {now if now is not None else '-'}"
    if now is None:
        return f"{label} {was} -> -"
    change = now - was
    return f"{label} {was} -> {now} ({change:+d})" if change else f"{label} {now}"


def _step_usage(step: Mapping[str, Any], prices: Prices | None) -> Usage | None:
    tokens = step.get("tokens")
    if not isinstance(tokens, dict):
        return None
    count_in, count_out = int(tokens.get("in") or 0), int(tokens.get("out") or 0)
    price = _price(prices, step.get("model"))
    cost = None if price is None else (count_in * price["in"] + count_out * price["out"]) / 1e6
    return Usage(count_in, count_out, cost)


def _price(prices: Prices | None, model: Any) -> Mapping[str, float] | None:
    if not prices:
        return None
    return prices.get(str(model)) if str(model) in prices else prices.get("*")


def load_prices(path: str | Path) -> Prices:
    """A price table file, checked: a ValueError says what is wrong with it."""
    try:
        table = orjson.loads(Path(path).read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise ValueError(f"cannot read the price table {path}: {exc}") from exc
    if not isinstance(table, dict):
        raise ValueError(f"price table {path}: expected an object of models")
    for model, price in table.items():
        if not (
            isinstance(price, dict)
            and set(price) == {"in", "out"}
            and all(isinstance(v, int | float) and not isinstance(v, bool) for v in price.values())
        ):
            raise ValueError(
                f"price table {path}: {model!r} must be "
                '{"in": <USD per million tokens>, "out": <USD per million tokens>}'
            )
    return table
