"""The scripted chat model behind `SWITCHBOARD_MODEL=demo`: offline, deterministic, tool-calling.

It is the console demo and the model every test uses, so its rules are part of the contract and
are listed in `DemoChatModel`'s docstring.
"""

from __future__ import annotations

import asyncio
import html
import json
import re
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool

from agent.attachments import split_content
from agent.history_window import SUMMARY_MARKER
from agent.quoted import CONTEXT_NAME, TAG
from agent.reply import content_text, is_injected
from agent.tools import CLARIFICATION_TOOL, SEND_FILE_TOOL, TIME_TOOL

__all__ = ["DEMO_FILE_TEXT", "GREETING", "MAX_DEMO_CHARS", "MAX_DEMO_DELAY_S", "DemoChatModel"]

GREETING = (
    "Hello! I'm Switchboard's demo agent. Ask me the time, say \"choose\" to get a question "
    'with options, or "echo" something back.'
)
CHOICE_ARGS: dict[str, Any] = {
    "question": "Which one do you mean?",
    "options": ["alpha", "beta", "gamma"],
    "clarification_type": "approach_choice",
    "context": "I need one detail.",
}

# Caps on what a chat message can make the demo do: `long 20000000` would otherwise block the
# CPU for seconds, take hundreds of MiB and send thousands of messages.
MAX_DEMO_CHARS = 20_000
MAX_DEMO_DELAY_S = 60.0

_GREETING_RE = re.compile(r"(hi|hello|hey)[\s!.?,]*")
_LONG_RE = re.compile(r"long\s+(\d+)")
_CODE_RE = re.compile(r"code\s+(\d+)")
_SLOW_RE = re.compile(r"slow\s+(\d+(?:\.\d+)?)")
_DRIP_RE = re.compile(r"drip\s+(\d+)")
MAX_DRIP_WORDS = 100
DRIP_EVERY_S = 0.1  # between streamed words: a reply that takes a few seconds to write
_LOOP_RE = re.compile(r"loop\s+(\d+)")
_FILE_RE = re.compile(r"file\s+([\w.-]{1,64})")
_SEND_RE = re.compile(r"send\s+(\S{1,200})")
_SUMMARY_RE = re.compile(r"(summari[sz]e|what did i miss)[?.!]*")
_STAMP_RE = re.compile(r"^\[[^\]]*UTC\] ")
_SAID_RE = re.compile(r'<message type="human">(.*?)</message>', re.DOTALL)
_SUMMARY_COUNT_RE = re.compile(r"Summary of (\d+) earlier messages\.")
_BEGAN = "It began with: "
DEMO_FILE_TEXT = "Hello from the demo agent.\n"

_WORDS = [
    "switchboard",
    "carries",
    "every",
    "message",
    "from",
    "the",
    "chat",
    "to",
    "the",
    "agent",
    "and",
    "back",
    "again",
    "while",
    "the",
    "shared",
    "store",
    "keeps",
    "each",
    "thread",
    "safe",
    "for",
    "all",
    "workers",
    "so",
    "that",
    "people",
    "can",
    "talk",
    "in",
    "peace",
]
_PARAGRAPH = 500


@dataclass(frozen=True, slots=True)
class _Step:
    """One scripted response: text, or a tool call; optionally after a pause."""

    text: str = ""
    tool: str = ""
    args: dict[str, Any] = field(default_factory=dict)
    delay_s: float = 0.0
    drip_s: float = 0.0  # pause between streamed words (the `drip N` rule)


class DemoChatModel(BaseChatModel):
    """Scripted, deterministic chat model with tool calling (`SWITCHBOARD_MODEL=demo`).

    The rules read the LAST real human message of the turn (injected messages such as
    `loop_warning` are skipped), trimmed and matched case-insensitively; the first rule that
    matches wins:

    - `hi` / `hello` / `hey` (whole message, optional punctuation) -> the greeting
      "Hello! I'm Switchboard's demo agent. ..."
    - starts with `echo ` -> the rest of the text verbatim (markdown and all)
    - `long N` -> plain prose of exactly N characters, paragraphs (blank line) about every 500
      characters, no markdown special characters
    - `code N` -> a sentence, a ```python fenced block of about N characters, a sentence
      (N above MAX_DEMO_CHARS, for either: a one-line refusal instead)
    - `slow S` -> waits S seconds (float), then "Done after S s." (S at most MAX_DEMO_DELAY_S)
    - `drip N` -> "w1 w2 … wN" (N at most MAX_DRIP_WORDS), written a word every DRIP_EVERY_S
    - `recall` -> "You first said: <first human message text of the thread>" (after a summary,
      the beginning it carried over)
    - contains `time` -> calls `current_time`, then answers "It is <tool result>."
    - starts with `choose` -> calls `ask_clarification(question="Which one do you mean?",
      options=["alpha", "beta", "gamma"], clarification_type="approach_choice",
      context="I need one detail.")`; after the resume answers "You chose: <answer>."
    - `loop N` -> calls `current_time` with identical (empty) args N times, one call per
      response, then answers "Loop finished."
    - `file NAME` -> calls `send_file(name=NAME, content=DEMO_FILE_TEXT)`, then answers
      "Here is NAME."
    - `send PATH` -> calls `send_file(name=<PATH's last part>, path=PATH)`, then answers
      "Here is <name>.", or the tool's "Not sent: …" when it refused
    - `summarise` / `summarize` / `what did I miss` (optional `?` or `.`) -> "Earlier here:
      <sender>: <their first 8 words>; …" for each message of the quoted conversation shown
      before this turn's message (`agent.quoted`), or "I see no earlier messages here."
    - a summary request of the history window (`agent.history_window`: its text holds
      SUMMARY_MARKER) -> "Summary of N earlier messages.\nIt began with: <first 12 words>\n
      Lately: <a>; <b>; <c>" (the last three human messages, 8 words each), N and the beginning
      carried over from an earlier summary among the messages; checked before every other rule
    - `boom` -> raises RuntimeError
    - a message with files (`agent.attachments` blocks) and no rule above -> one sentence per
      file: "I see an image (WxH)." / "I read <name>: <its first 8 words>" / "I heard <name>:
      <its transcript's first 8 words>" / "I can't read <name>.", then " You said: <text>" when
      there is text
    - anything else -> "You said: <text>"

    Only the user's own words (the text blocks before the file blocks) are matched by the rules.

    Tool calls are answered by ToolMessages of this turn; a rule counts them to know where it is.
    `bind_tools` returns the model itself: the rules name their tools, so there is nothing to
    bind, and the agent loop pays nothing for re-binding on every call.
    """

    @property
    def _llm_type(self) -> str:
        return "switchboard-demo"

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        step = _script(messages)
        if step.delay_s or step.drip_s:
            time.sleep(step.delay_s + _writing_s(step))
        return _result(step, len(messages))

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        step = _script(messages)
        if step.delay_s or step.drip_s:
            await asyncio.sleep(step.delay_s + _writing_s(step))
        return _result(step, len(messages))

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        """Streamed only when someone listens for tokens (SWITCHBOARD_STREAMING); `ainvoke`
        alone takes `_agenerate`."""
        step = _script(messages)
        if step.delay_s:
            await asyncio.sleep(step.delay_s)
        for chunk in _chunks(step, len(messages)):
            if run_manager is not None:
                await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk
            if step.drip_s:
                await asyncio.sleep(step.drip_s)


def _writing_s(step: _Step) -> float:
    """A dripped reply takes as long unstreamed as streamed: a model writes at its own pace."""
    return step.drip_s * len(step.text.split())


def _chunks(step: _Step, position: int) -> list[ChatGenerationChunk]:
    """The step as a real model would stream it: word by word (a tool call in one piece)."""
    message = _message(step, position)
    if step.tool:
        call = message.tool_calls[0]
        chunk = AIMessageChunk(
            content="",
            tool_call_chunks=[
                {
                    "name": call["name"],
                    "args": json.dumps(call["args"]),
                    "id": call["id"],
                    "index": 0,
                    "type": "tool_call_chunk",
                }
            ],
        )
        return [ChatGenerationChunk(message=chunk)]
    words = re.split(r"(?<=\s)", step.text) or [""]
    return [ChatGenerationChunk(message=AIMessageChunk(content=word)) for word in words]


def _result(step: _Step, position: int) -> ChatResult:
    return ChatResult(generations=[ChatGeneration(message=_message(step, position))])


def _message(step: _Step, position: int) -> AIMessage:
    if step.tool:
        call = {
            "name": step.tool,
            "args": dict(step.args),
            "id": f"call_{position}_{step.tool}",
            "type": "tool_call",
        }
        return AIMessage(content="", tool_calls=[call])
    return AIMessage(content=step.text)


def _script(messages: Sequence[BaseMessage]) -> _Step:
    start = _last_human_index(messages)
    if start is None:
        return _Step(text="You said: ")
    words, notes, _ = split_content(messages[start].content)
    text = words.strip()
    if SUMMARY_MARKER in text:
        return _Step(text=_history_summary(text))
    low = text.lower()
    results = [m for m in messages[start + 1 :] if isinstance(m, ToolMessage)]

    if _GREETING_RE.fullmatch(low):
        return _Step(text=GREETING)
    if low.startswith("echo "):
        return _Step(text=text[5:])
    if match := _LONG_RE.fullmatch(low):
        return _capped(match, _prose)
    if match := _CODE_RE.fullmatch(low):
        return _capped(match, _code)
    if match := _SLOW_RE.fullmatch(low):
        if float(match.group(1)) > MAX_DEMO_DELAY_S:
            return _Step(text=f"The demo waits at most {MAX_DEMO_DELAY_S:g} s.")
        return _Step(text=f"Done after {match.group(1)} s.", delay_s=float(match.group(1)))
    if match := _DRIP_RE.fullmatch(low):
        count = min(int(match.group(1)), MAX_DRIP_WORDS)
        text = " ".join(f"w{i}" for i in range(1, count + 1))
        return _Step(text=text, drip_s=DRIP_EVERY_S)
    if low == "recall":
        return _Step(text=f"You first said: {_first_human_text(messages)}")
    if "time" in low:
        answered = _results_of(results, TIME_TOOL)
        if answered:
            return _Step(text=f"It is {answered[-1]}.")
        return _Step(tool=TIME_TOOL)
    if low.startswith("choose"):
        answered = _results_of(results, CLARIFICATION_TOOL)
        if answered:
            return _Step(text=f"You chose: {answered[-1]}.")
        return _Step(tool=CLARIFICATION_TOOL, args=CHOICE_ARGS)
    if match := _LOOP_RE.fullmatch(low):
        if len(_results_of(results, TIME_TOOL)) < int(match.group(1)):
            return _Step(tool=TIME_TOOL)
        return _Step(text="Loop finished.")
    if match := _FILE_RE.fullmatch(text):
        if _results_of(results, SEND_FILE_TOOL):
            return _Step(text=f"Here is {match.group(1)}.")
        return _Step(tool=SEND_FILE_TOOL, args={"name": match.group(1), "content": DEMO_FILE_TEXT})
    if match := _SEND_RE.fullmatch(text):
        path = match.group(1)
        name = path.rstrip("/").rsplit("/", 1)[-1] or "file"
        if sent := _results_of(results, SEND_FILE_TOOL):
            return _Step(text=sent[-1] if sent[-1].startswith("Not sent") else f"Here is {name}.")
        return _Step(tool=SEND_FILE_TOOL, args={"name": name, "path": path})
    if _SUMMARY_RE.fullmatch(low):
        return _Step(text=_summary(messages[:start]))
    if low == "boom":
        raise RuntimeError("the demo model was asked to fail")
    if notes:
        seen = " ".join(_seen(note) for note in notes)
        return _Step(text=f"{seen} You said: {text}" if text else seen)
    return _Step(text=f"You said: {text}")


_IMAGE_SEEN = re.compile(r"\[image: .*, (\d+x\d+)\]")
_FILE_READ = re.compile(r"\[file: (.+?) \(([^)]*)\)\]\n(.*)", re.DOTALL)
_HEARD = re.compile(r"\[audio: (.+?), transcribed\]\n(.*)", re.DOTALL)


def _seen(note: str) -> str:
    """What the demo says about one attachment note (see the class docstring)."""
    if match := _IMAGE_SEEN.fullmatch(note):
        return f"I see an image ({match.group(1)})."
    if match := _FILE_READ.fullmatch(note):
        first = " ".join(match.group(3).split()[:8])
        return f"I read {match.group(1)}: {first}"
    if match := _HEARD.fullmatch(note):
        return f"I heard {match.group(1)}: {' '.join(match.group(2).split()[:8])}"
    name = note[len("[file: ") :].split(" (", 1)[0] if note.startswith("[file: ") else "a file"
    return f"I can't read {name}."


def _capped(match: re.Match[str], make: Callable[[int], str]) -> _Step:
    length = int(match.group(1))
    if length > MAX_DEMO_CHARS:
        return _Step(text=f"The demo writes at most {MAX_DEMO_CHARS} characters.")
    return _Step(text=make(length))


def _last_human_index(messages: Sequence[BaseMessage]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, HumanMessage) and not is_injected(message):
            return index
    return None


def _summary(before: Sequence[BaseMessage]) -> str:
    """The demo's account of the quoted conversation right before the turn's message."""
    block = before[-1] if before else None
    if not isinstance(block, HumanMessage) or block.name != CONTEXT_NAME:
        return "I see no earlier messages here."
    body = content_text(block.content).split(f"<{TAG}>\n", 1)[-1].rsplit(f"\n</{TAG}>", 1)[0]
    said = []
    for line in body.split("\n"):
        if line.startswith("  ") or ": " not in line:
            continue
        who, _, text = _STAMP_RE.sub("", line).partition(": ")
        said.append(f"{who.split(' (', 1)[0]}: {' '.join(text.split()[:8])}")
    return "Earlier here: " + "; ".join(said).rstrip(".") + "."


def _history_summary(request: str) -> str:
    """The demo's summary: bounded, whatever the history, and carrying the beginning over."""
    said = [html.unescape(m).strip() for m in _SAID_RE.findall(request)]
    count, began, recent = 0, "", []
    for text in said:
        if match := _SUMMARY_COUNT_RE.search(text):
            count += int(match.group(1))
            began = began or _began(text)
            continue
        count += 1
        began = began or " ".join(text.split()[:12])
        recent.append(" ".join(text.split()[:8]))
    return (
        f"Summary of {count} earlier messages.\n{_BEGAN}{began}\nLately: {'; '.join(recent[-3:])}"
    )


def _began(summary: str) -> str:
    for line in summary.splitlines():
        if line.startswith(_BEGAN):
            return line[len(_BEGAN) :]
    return ""


def _first_human_text(messages: Sequence[BaseMessage]) -> str:
    for message in messages:
        if isinstance(message, HumanMessage) and not is_injected(message):
            text = content_text(message.content).strip()
            if message.additional_kwargs.get("lc_source") == "summarization":
                return _began(text) or text
            return text
    return ""


def _results_of(results: Sequence[ToolMessage], tool: str) -> list[str]:
    return [content_text(m.content) for m in results if m.name == tool]


def _prose(length: int) -> str:
    """Plain prose of exactly `length` characters, a blank line about every 500 characters."""
    if length <= 0:
        return ""
    parts: list[str] = []
    size = paragraph = 0
    offset = 0
    while size <= length:
        words = [_WORDS[(offset + k) % len(_WORDS)] for k in range(12)]
        offset += 7
        sentence = " ".join(words).capitalize() + "."
        separator = "" if not parts else ("\n\n" if paragraph >= _PARAGRAPH else " ")
        if separator == "\n\n":
            paragraph = 0
        parts += [separator, sentence]
        paragraph += len(separator) + len(sentence)
        size += len(separator) + len(sentence)
    text = "".join(parts)[:length]
    return text if not text[-1].isspace() else text[:-1] + "."


def _code(length: int) -> str:
    lines: list[str] = []
    size = 0
    index = 1
    while size < max(length, 1):
        block = f"def step_{index}(value):\n    return value + {index}\n"
        lines.append(block)
        size += len(block)
        index += 1
    body = "\n".join(lines)
    return (
        "Here is a small Python example:\n\n"
        f"```python\n{body}```\n\n"
        "Each function adds its own number to the value."
    )
