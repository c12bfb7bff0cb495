"""The channel manager as a pipeline: intake → gates → routing → turns → replies.

| module / folder | job                                                                 |
|-----------------|---------------------------------------------------------------------|
| `manager.py`    | wiring; `deliver` (append to the inbox) and one entry's way through  |
| `intake.py`     | the worker side of the inbox: bounded reads, keep, reclaim, sweep    |
| `gates/`        | the middleware chain a message passes, one gate after another        |
| `routing.py`    | message → agent thread                                               |
| `turns/`        | a thread's turns under its lock: batches, runs, the answer delivered |
| `replies/`      | what the manager says: replies, notices, questions, errors with a ref |
| `context.py`    | the values that travel: one message's context, one turn's session    |
| `config.py`     | what the manager is built from; `ports.py`: the stores, as Protocols |
| `codec.py`      | an `InboundMessage` as inbox payload bytes                           |
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
