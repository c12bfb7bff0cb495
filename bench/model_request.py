"""One OpenAI model call by thread length and answer length: Switchboard's model against
langchain-openai's own.

Both are `ChatOpenAI` with the built-in tools bound, streaming their answer from the loopback
fake model server (in this process, so its share is the same for both). Switchboard's model
(`agent.build_model`, `agent/openai_requests.py`) sends the messages and tools as langchain built
them and reads the streamed chunks as the dicts the server wrote; the other lets the openai SDK
walk the request against its types first, which costs more the longer the thread, and build a
pydantic object of every chunk, which costs more the longer the answer (the fake writes 8
characters per chunk). Prints the median wall time per call.

Run: `.venv/bin/python bench/model_request.py [calls]`.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path

_REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(_REPO))

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_openai import ChatOpenAI

from agent import build_model
from agent.model import MODEL_TIMEOUT_S
from agent.tools import builtin_tools
from service.logging import configure_logging
from tests.fakes.openai_server import API_KEY, FakeOpenAI

LENGTHS = (2, 20, 60, 120)
ANSWERS = (40, 400, 2_400)  # characters: 5, 50 and 300 chunks


def _thread(n: int, said: str = "and now?") -> list[BaseMessage]:
    pairs = [
        (HumanMessage(f"hello, this is message {i}"), AIMessage(f"You said: message {i}"))
        for i in range(n // 2)
    ]
    earlier = [m for pair in pairs for m in pair][: n - 1]
    return [*earlier, HumanMessage(said)]


async def _per_call_ms(model: ChatOpenAI, n: int, calls: int, answer: int = 0) -> float:
    bound = model.bind_tools(list(builtin_tools()))
    thread = _thread(n, ("x" * max(0, answer - len("You said: "))) or "and now?")
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        async for _ in bound.astream(thread):
            pass
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


async def main(calls: int) -> None:
    configure_logging(level="WARNING")
    server = FakeOpenAI()
    await server.start()
    try:
        ours = build_model(
            "openai:bench-model",
            openai_base_url=server.base_url,
            openai_api_key=API_KEY,
            anthropic_api_key=None,
        )
        assert isinstance(ours, ChatOpenAI)
        walked = ChatOpenAI(
            model="bench-model",
            base_url=server.base_url,
            api_key=API_KEY,  # type: ignore[arg-type]
            timeout=MODEL_TIMEOUT_S,
            stream_usage=True,
        )
        await _per_call_ms(ours, 2, 5)  # warm-up: connections, schemas
        await _per_call_ms(walked, 2, 5)
        print(f"{'messages':>8} {'SDK walk ms':>12} {'as built ms':>12} {'saved ms':>9}")
        for n in LENGTHS:
            sdk = await _per_call_ms(walked, n, calls)
            built = await _per_call_ms(ours, n, calls)
            print(f"{n:8d} {sdk:12.2f} {built:12.2f} {sdk - built:9.2f}")
        print(
            f"\n{'answer chars':>12} {'SDK ms':>8} {'as built ms':>12} {'saved ms':>9}  (2 messages)"
        )
        for chars in ANSWERS:
            sdk = await _per_call_ms(walked, 2, calls, chars)
            built = await _per_call_ms(ours, 2, calls, chars)
            print(f"{chars:12d} {sdk:8.2f} {built:12.2f} {sdk - built:9.2f}")
    finally:
        await server.stop()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 50))
