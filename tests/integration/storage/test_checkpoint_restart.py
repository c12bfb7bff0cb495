"""An agent thread outlives the process that wrote it: each turn runs in a fresh interpreter
(langchain's create_agent, a fake chat model, RedisCheckpointSaver on the shared server)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import redis.asyncio as aioredis

from storage import RedisCheckpointSaver

__all__: list[str] = []

_ROOT = Path(__file__).resolve().parents[3]

# One agent turn: argv = redis url, key prefix, thread id, user text, model reply. Prints, as
# its last stdout line, the thread's messages and how many messages the model was shown.
_TURN = """
import asyncio, json, sys
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from storage import RedisCheckpointSaver, connect

url, prefix, thread_id, text, reply, cluster = sys.argv[1:7]
seen = []

class Model(GenericFakeChatModel):
    async def _agenerate(self, messages, *args, **kwargs):
        seen.append(len(messages))
        return await super()._agenerate(messages, *args, **kwargs)

async def main():
    client = connect(url, cluster=cluster == "1")
    try:
        saver = RedisCheckpointSaver(client, prefix=prefix)
        agent = create_agent(Model(messages=iter([AIMessage(reply)])), tools=[], checkpointer=saver)
        config = {"configurable": {"thread_id": thread_id}}
        state = await agent.ainvoke({"messages": [{"role": "user", "content": text}]}, config)
    finally:
        await client.aclose()
    history = [[m.type, m.content] for m in state["messages"]]
    print(json.dumps({"history": history, "model_saw": seen}))

asyncio.run(main())
"""


async def _turn(
    redis_url: str, prefix: str, thread_id: str, text: str, reply: str, *, cluster: bool
) -> dict:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _TURN,
        redis_url,
        prefix,
        thread_id,
        text,
        reply,
        "1" if cluster else "0",
        cwd=_ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=90)
    assert proc.returncode == 0, err.decode()[-3000:]
    return json.loads(out.decode().strip().splitlines()[-1])


async def test_thread_written_by_one_process_is_continued_by_a_fresh_one(
    redis_url: str, redis: aioredis.Redis, prefix: str, redis_cluster: bool
) -> None:
    first = await _turn(
        redis_url, prefix, "conv-1", "hello", "Hi, I am the agent.", cluster=redis_cluster
    )
    second = await _turn(
        redis_url, prefix, "conv-1", "what did I say?", "You said hello.", cluster=redis_cluster
    )

    assert first["history"] == [["human", "hello"], ["ai", "Hi, I am the agent."]]
    assert second["history"] == [
        ["human", "hello"],
        ["ai", "Hi, I am the agent."],
        ["human", "what did I say?"],
        ["ai", "You said hello."],
    ]
    assert second["model_saw"] == [3]

    saver = RedisCheckpointSaver(redis, prefix=prefix)
    latest = await saver.aget_tuple({"configurable": {"thread_id": "conv-1", "checkpoint_ns": ""}})
    assert latest is not None
    assert [m.content for m in latest.checkpoint["channel_values"]["messages"]] == [
        "hello",
        "Hi, I am the agent.",
        "what did I say?",
        "You said hello.",
    ]
