"""One try as its request handlers see it: who it is, where its rows and objects go, and how
the task said it ended.

A ``TryContext`` is built whole, once per try (``TryContext.open`` for a claimed try), before
its task process starts; nothing fills it in afterwards. What changes while the try runs is only
what it learns: ``outcome`` (what the task said, the value ``state.engine.try_life.record`` takes)
and ``lost`` (the try no longer holds its task instance). A handler that cannot reply at once
replies through ``reply_later``; the supervisor loop sends those replies (``take_replies``), so
nothing here needs the loop or its socket.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import SQLAlchemyError

from state.core import Fence, StoreUnavailable, TryFenced
from state.engine import Outcome
from state.records import TIKey
from worker import wire as p
from worker.supervisor.background import Background
from worker.supervisor.logs import TryLog
from worker.xcom.base import XComBackendError
from worker.xcom.try_xcoms import TryXComs, prepare_xcoms

if TYPE_CHECKING:
    from state.engine import HeldTry
    from tradewind.settings import Settings


@dataclass
class TryContext:
    """Everything the handlers of one try need."""

    url: str
    fence: Fence
    ti: TIKey
    details: p.TaskDetails
    log: TryLog
    # TRADEWIND_STATE_STORE_MAX_VALUE_BYTES: a state value above it is written with a warning,
    # or goes to object storage (worker/state_store/serving.py).
    max_value_bytes: int
    xcoms: TryXComs = field(default_factory=TryXComs)
    # XCom rows are read and written here, off the loop (worker/supervisor/background.py).
    background: Background = field(default_factory=Background)
    outcome: Outcome | None = None
    lost: bool = False
    # The worker's settings, for a request that needs more than the store (a run's reset).
    settings: Settings | None = None
    _later: list[p.Message] = field(default_factory=list, init=False, repr=False)

    @classmethod
    def open(
        cls, held: HeldTry, details: p.TaskDetails, task: Any, settings: Settings, log: TryLog
    ) -> TryContext:
        """The context of a claimed try; starts the backend helper process if the try needs one.

        Raises ``SettingsError`` when ``TRADEWIND_XCOM_BACKEND`` names no usable backend.
        """
        return cls(
            settings.sql_url,
            held.fence,
            held.ti,
            details,
            log,
            max_value_bytes=settings.state_store_max_value_bytes,
            xcoms=prepare_xcoms(held, task, settings, log),
            settings=settings,
        )

    def reply_later(self, request: p.Message, produce: Callable[[], p.Message | None]) -> None:
        """Queue the reply of a request whose handler returned None, once it can be made.

        ``produce`` may itself return None: it started another call, whose callback replies.
        """
        reply = answer(self, request, produce)
        if reply is not None:
            self._later.append(reply)

    def take_replies(self) -> list[p.Message]:
        """The replies made by ``reply_later`` since the last call, in the order they were made."""
        replies, self._later = self._later, []
        return replies


def answer(
    ctx: TryContext, request: p.Message, produce: Callable[[], p.Message | None]
) -> p.Message | None:
    """The reply ``produce`` makes; any failure becomes one ``ErrorResponse`` line."""
    try:
        reply = produce()
    except TryFenced as error:
        ctx.lost = True
        reply = p.ErrorResponse(error=str(error))
    except XComBackendError as error:
        # Already "<Type>: <message>" when the helper's backend raised it.
        reply = p.ErrorResponse(error=str(error))
    except (SQLAlchemyError, StoreUnavailable, ValueError, TypeError) as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
        reply = p.ErrorResponse(error=f"{type(error).__name__}: {first_line}")
    if reply is not None:
        reply.id = request.id
    return reply
