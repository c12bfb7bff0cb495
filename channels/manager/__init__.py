"""The channel manager as a pipeline: intake → gates → routing → turns → replies.

| module        | job                                                                   |
|---------------|-----------------------------------------------------------------------|
| `manager.py`  | wiring; `deliver` (append to the inbox) and one entry's way through   |
| `intake.py`   | the worker side of the inbox: bounded reads, keep, reclaim, sweep      |
| `gates.py`    | middleware chain: dedupe → rate + access → link/help → commands → budget → limits → thread |
| `routing.py`  | message → agent thread                                                |
| `commands.py` | `/help`, `/link`, `/unlink`, `/new`, `/stop`, `/status`               |
| `questions.py`| clarification questions: ask, check presses, show the answer          |
| `batches.py`  | which queued messages one turn answers, as what text (pure)           |
| `turns.py`    | the only owner of lock, queue and follow-ups: submit, batches, sweep  |
| `runs.py`     | one agent run: lock keeper, `/stop`, timeout, typing or a streamed reply |
| `delivery.py` | a turn's answer in chat: question, reply (streamed or not), files     |
| `files.py`    | fetching a batch's attachments and sending the agent's files          |
| `replies.py`  | rendering, sending, typing, errors with a reference id                |
| `codec.py`    | an `InboundMessage` as inbox payload bytes                            |
"""

from channels.manager.codec import CorruptPayload, decode_message, encode_message
from channels.manager.config import ManagerConfig, ManagerStores, TurnRunner
from channels.manager.context import MessageContext, Outcome
from channels.manager.manager import Manager

__all__ = [
    "CorruptPayload",
    "Manager",
    "ManagerConfig",
    "ManagerStores",
    "MessageContext",
    "Outcome",
    "TurnRunner",
    "decode_message",
    "encode_message",
]
