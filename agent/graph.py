"""The agent runtime: the built-in agent, one compiled `create_agent` graph per process.

`AgentRuntime` is the built-in backend (`agent.backends.BuiltinAgent`) under its historic name:
the graph is built once (model, tools, middleware, checkpointer, tracing callbacks) and every
turn only builds a small config (`agent.backends.local.LocalGraphRunner`): the thread id, a fresh
run id, the lock fence, metadata, the recursion limit. Nothing is compiled or bound per call.

Clarifications:

- `resume(thread, answer)` reads the thread's pending interrupt from the checkpoint and resumes it
  with `Command(resume=answer)`: the waiting `ask_clarification` call completes and the model sees
  the answer as its result. With nothing pending it starts a new turn with the text instead (the
  question may have been answered meanwhile from another chat client).
- `run_turn(thread, text)` on a thread that waits for an answer (the manager normally routes such
  a message as the answer, but the runtime must cope): the text ANSWERS the question. LangGraph
  drops the interrupt when a run starts with new input, so `ThreadRepairMiddleware` turns the
  message into the waiting call's tool result, in the stored thread too. The outcome equals a
  resume with that text, no tool call is left dangling, and a plain turn needs no checkpoint read
  up front (which would double the checkpoint loading of every turn).

Because the interrupt lives in the checkpoint, a resume works in any process, after a restart too.

Durability is "exit": a turn's state is written once, when the run ends (finished, interrupted
for a question, or failed), instead of after every step. A chat turn is the unit users see; a
worker that dies mid-turn leaves the thread exactly as the previous turn left it (no half-run with
a dangling tool call), and a turn costs one checkpoint write instead of one per step.
"""

from __future__ import annotations

from agent.backends.builtin import BuiltinAgent

__all__ = ["AgentRuntime"]


class AgentRuntime(BuiltinAgent):
    """Runs turns of the built-in agent on checkpointed threads; build it once per process."""
