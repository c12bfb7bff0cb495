"""The gates a message passes before it reaches its thread, in the chain's order
(`manager.py` builds it once):

| module        | gate                                                                 |
|---------------|----------------------------------------------------------------------|
| `observe.py`  | `ObserveGate`: a message only to be seen is kept for context, finished |
| `chain.py`    | `DedupeGate`: one entry per message, admission read with the claim   |
| `home.py`     | `HomeGate`: Slack's App Home tab                                     |
| `feedback.py` | `FeedbackGate`: 👍/👎 votes, never handed to a thread                 |
| `sessions.py` | `SessionsGate`: the conversation under a binding's `sessions`        |
| `chain.py`    | `AccessAndRate`, `LinkAndHelp`, `Commands`, `BudgetGate`, `InputLimits`, `Routing` |
| `commands.py` | the chat commands the `Commands` gates answer (`CommandDesk`)        |
| `askers.py`   | who may act on someone's run: buttons and their typed twins          |

Then the turn (`channels/manager/turns/`).
"""

__all__: list[str] = []
