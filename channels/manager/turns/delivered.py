"""Where a batch's answer landed, shared by the turn that records it and the delivery that
fills it (its own module: the turn's session holds one, and delivery imports the session)."""

from __future__ import annotations

from dataclasses import dataclass, field

from channels.adapter import SentRef

__all__ = ["Delivered"]


@dataclass(slots=True)
class Delivered:
    """Where the answer landed: every message id it occupies, in its chat."""

    chat_id: str = ""
    message_ids: list[str] = field(default_factory=list)
    unreceipted: dict[int, str] = field(default_factory=dict)  # sent last; `finish` receipts it

    def add(self, sent: SentRef) -> str:
        self.chat_id = sent.chat_id or self.chat_id
        self.message_ids += sent.message_ids
        return f"{sent.chat_id}|{','.join(sent.message_ids)}"

    def add_receipt(self, receipt: str) -> None:
        chat, _, ids = receipt.partition("|")
        self.chat_id = chat or self.chat_id
        self.message_ids += [i for i in ids.split(",") if i]
