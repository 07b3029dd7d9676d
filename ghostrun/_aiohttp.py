"""aiohttp interception (DESIGN §1): not yet built; see issue 9."""

from __future__ import annotations

from collections.abc import Callable


class AiohttpAdapter:
    def check(self) -> bool:
        return False

    def install(self) -> Callable[[], None]:
        raise NotImplementedError
