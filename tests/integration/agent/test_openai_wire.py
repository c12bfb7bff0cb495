"""`openai:` models over the wire: the real langchain-openai client against a loopback fake."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_openai import ChatOpenAI

from agent import AgentRuntime, TurnContext
from switchboard.errors import AgentError
from tests.fakes.openai_server import API_KEY, FakeOpenAI
from tests.integration.agent.conftest import openai_model

CTX = TurnContext(user_id="u-1")
ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00"


def _streaming(server: FakeOpenAI) -> ChatOpenAI:
    return ChatOpenAI(
        model="gpt-4o-mini",
        base_url=server.base_url,
        api_key=API_KEY,
        streaming=True,
        stream_usage=True,
    )


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_tool_call_round_trip_over_the_wire(
    fake_openai: FakeOpenAI, make_runtime: Callable[..., AgentRuntime], stream: bool
) -> None:
    model = _streaming(fake_openai) if stream else openai_model(fake_openai)
    runtime = make_runtime(model=model, system_prompt="You are wired.")
    result = await runtime.run_turn(uuid.uuid4().hex, "what time is it?", CTX)

    assert re.fullmatch(rf"The tool said: {ISO}\.", result.reply_text)
    first, second = fake_openai.requests
    assert first.headers["Authorization"] == f"Bearer {API_KEY}"
    assert bool(first.body.get("stream")) is stream
    assert sorted(first.tool_names) == ["ask_clarification", "current_time", "send_file"]
    assert first.messages[0] == {"role": "system", "content": "You are wired."}
    assistant, tool = second.messages[-2:]
    (call,) = assistant["tool_calls"]
    assert call["function"]["name"] == "current_time"
    assert tool["role"] == "tool" and tool["tool_call_id"] == call["id"]
    assert re.fullmatch(ISO, tool["content"])


async def test_clarification_round_trip_over_the_wire(
    fake_openai: FakeOpenAI, make_runtime: Callable[..., AgentRuntime]
) -> None:
    runtime = make_runtime(model=openai_model(fake_openai))
    thread = uuid.uuid4().hex
    asked = await runtime.run_turn(thread, "choose a flavour", CTX)
    assert asked.question is not None and asked.question.options == ("alpha", "beta", "gamma")

    result = await runtime.resume(thread, "beta", CTX)
    assert result.reply_text == "The tool said: beta."
    tool = fake_openai.requests[-1].messages[-1]
    assert tool["role"] == "tool" and tool["content"] == "beta"


async def test_new_message_while_waiting_is_sent_as_the_answer(
    fake_openai: FakeOpenAI, make_runtime: Callable[..., AgentRuntime]
) -> None:
    runtime = make_runtime(model=openai_model(fake_openai))
    thread = uuid.uuid4().hex
    await runtime.run_turn(thread, "choose a flavour", CTX)
    result = await runtime.run_turn(thread, "gamma", CTX)
    assert result.reply_text == "The tool said: gamma."
    roles = [m["role"] for m in fake_openai.requests[-1].messages]
    assert roles == ["system", "user", "assistant", "tool"]


async def test_cut_off_tool_call_does_not_break_the_provider_history(
    fake_openai: FakeOpenAI, make_runtime: Callable[..., AgentRuntime]
) -> None:
    runtime = make_runtime(model=openai_model(fake_openai))
    thread = uuid.uuid4().hex
    config = {"configurable": {"thread_id": thread}}
    cut_off = AIMessage(
        "", tool_calls=[{"name": "current_time", "args": {}, "id": "c-lost", "type": "tool_call"}]
    )
    await runtime.graph.aupdate_state(
        config, {"messages": [HumanMessage("time?"), cut_off]}, as_node="model"
    )
    await runtime.graph.aupdate_state(config, None, as_node="tools")
    result = await runtime.run_turn(thread, "hello again", CTX)
    assert result.reply_text == "You said: hello again"


async def test_rejected_key_is_an_agent_error_that_never_shows_the_key(
    fake_openai: FakeOpenAI, make_runtime: Callable[..., AgentRuntime]
) -> None:
    secret = "sk-wrong-key-must-not-leak"
    runtime = make_runtime(model=openai_model(fake_openai, key=secret))
    with pytest.raises(AgentError) as caught:
        await runtime.run_turn(uuid.uuid4().hex, "hello", CTX)
    assert secret not in str(caught.value)
    assert fake_openai.requests[0].headers["Authorization"] == f"Bearer {secret}"
