"""What the manager says in chat.

| module         | job                                                                  |
|----------------|----------------------------------------------------------------------|
| `responder.py` | rendering, sending, typing, notices, errors with a reference id      |
| `questions.py` | clarification questions: ask, check presses, show the answer         |
"""

__all__: list[str] = []
