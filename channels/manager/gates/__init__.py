"""The gates a message passes before it reaches its thread, one module per gate, in the
chain's order (`manager.py` builds it, `chain.py` says how a gate hands on):

| module             | gate                                                                  |
|--------------------|-----------------------------------------------------------------------|
| `observe.py`       | `ObserveGate`: a message only to be seen is kept for context, finished |
| `dedupe.py`        | `DedupeGate`: one entry per message; the flood count and a DM's thread read with the claim |
| `home.py`          | `HomeGate`: Slack's App Home tab                                      |
| `feedback.py`      | `FeedbackGate`: 👍/👎 votes, never handed to a thread                  |
| `sessions.py`      | `SessionsGate`: the conversation under a binding's `sessions`         |
| `access.py`        | `AccessAndRate`: the flood limit, linked access, which text is a command |
| `command_gates.py` | `LinkAndHelp` (before access is needed), `Commands` (the rest)        |
| `budget.py`        | `BudgetGate`: the sender's model budget                               |
| `limits.py`        | `InputLimits`: something readable, and not too much of it             |
| `thread.py`        | `Routing`: the message's thread, its 👀, then the turn                 |

`commands.py` holds the chat commands the command gates run (`CommandDesk`); `askers.py`, who
may act on someone's run (buttons and their typed twins). Then the turn
(`channels/manager/turns/`).
"""

__all__: list[str] = []
