"""A thread's turns, under its lock: from the queue to the answer in the chat.

| module             | job                                                                 |
|--------------------|---------------------------------------------------------------------|
| `scheduler.py`     | the only owner of lock, queue and follow-ups: submit, batches, sweep |
| `hold.py`          | one keeper for everything done under the lock                       |
| `batches.py`       | which queued messages one turn answers, as what text (pure)         |
| `history.py`       | conversation context handed to the agent with the turn              |
| `files.py`         | a batch's attachments fetched, the agent's files sent               |
| `runs.py`          | one agent run: `/stop`, timeout, typing or a streamed reply         |
| `stream_policy.py` | whether a turn streams                                              |
| `steering.py`      | messages that queue behind a running batch join its run             |
| `ledger.py`        | the answer as recorded before its first send                        |
| `delivery.py`      | the recorded answer into the chat, piece by piece, receipted        |
| `delivered.py`     | where a batch's answer landed                                       |
| `retry.py`         | the closing steps, retried through a storage blip                   |
"""

__all__: list[str] = []
