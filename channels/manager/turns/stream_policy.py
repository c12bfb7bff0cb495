"""Whether a turn streams its reply as the model writes it.

A streamed reply is seen only when it takes longer than `after_s`: nothing is shown before,
and a reply written faster is sent whole. Yet asking the model to stream always costs: the model
client then handles every token as an event of its own (langchain-openai, the callbacks and
LangGraph's message stream: about 0.1 ms of CPU per chunk even with the chunks read as plain
dicts, `agent/openai_requests.py`, against one parse for a whole reply), which on a fast model is
pure overhead (`bench/bot_floor.py --slow-model` and `bench/model_request.py` show both cases).

So a worker streams while replies are slow enough to be seen streaming: it streams until it has
seen `warmup` replies, and then as long as at least a quarter of its last `window` replies took
`after_s` or more. A hosted LLM writing a paragraph takes seconds, so its turns always stream; a
fast local model, or replies of a few words, are sent whole without the per-token cost. A lone
slow turn (the process's first, with its imports and connections; a garbage-collection pause
under load) does not switch streaming on. The price: where fewer than one reply in four is slow,
those replies show the typing hint instead of a stream.

And a worker streams at most `max_open` replies at once. A stream shows about one draft or edit a
second, and a platform limits the bot as a whole (Telegram: 30 messages a second), so past a few
dozen streams the drafts cannot be shown anyway: they yield to the replies themselves. A burst's
replies beyond the cap are asked for whole, with the typing hint, instead of paying the
per-token cost for drafts nobody would see (`bench/bot_floor.py --slow-model 2 --streaming-off`).

A run's time is the model's writing plus whatever the worker made it wait. In a burst that
saturates the worker, even a fast model's runs take a second or more, and counting them as slow
replies switched streaming on just when it cost most (a 600-chat burst streamed about one reply
in ten). So a slow time measured while the worker is crowded (more runs at once than it would
stream) is not counted; a fast one always is, since waiting only ever makes a run slower.
"""

from __future__ import annotations

from collections import deque

__all__ = ["StreamPolicy"]


class StreamPolicy:
    def __init__(
        self, after_s: float, *, window: int = 32, warmup: int = 8, max_open: int = 16
    ) -> None:
        self._after_s = after_s
        self._warmup = warmup
        self._max_open = max_open
        self._open = 0  # streams opened and not yet closed
        self._recent: deque[float] = deque(maxlen=window)
        self._slow = 0  # how many of `_recent` took `after_s` or more

    def wanted(self) -> bool:
        if self._open >= self._max_open:
            return False
        if self._after_s <= 0:
            return True  # every reply is shown as it is written
        return len(self._recent) < self._warmup or self._slow * 4 >= len(self._recent)

    def opened(self) -> None:
        """A stream is running: it counts against `max_open` until `closed()`."""
        self._open += 1

    def closed(self) -> None:
        self._open -= 1

    def record(self, seconds: float, *, running: int = 0) -> None:
        """How long a finished run took to write its reply, with `running` runs going on in the
        worker when it ended."""
        if running > self._max_open and seconds >= self._after_s:
            return  # perhaps the crowd's time rather than the model's
        if len(self._recent) == self._recent.maxlen and self._recent[0] >= self._after_s:
            self._slow -= 1
        self._recent.append(seconds)
        if seconds >= self._after_s:
            self._slow += 1
