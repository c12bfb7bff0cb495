"""Chat channels: the normalised message model, the adapter interface, the manager, access.

Platform adapters (`telegram`, `slack`, `discord`, `console`) are imported from their own modules
by the composition root, and only when their platform is configured: each pulls in a whole SDK.
"""

from channels.access import AccessDecision, AccessGate
from channels.adapter import (
    AckKind,
    Adapter,
    Capabilities,
    Chunk,
    Deliver,
    Markup,
    QuestionPrompt,
    ReportsHealth,
    SentRef,
)
from channels.commands import Command, CommandName, parse_command
from channels.manager import Manager, ManagerConfig, ManagerStores
from channels.message import (
    Attachment,
    ButtonPress,
    InboundMessage,
    Platform,
    ReplyTarget,
    conversation_key,
    parse_conversation_key,
)
from channels.render import render_chunks

__all__ = [
    "AccessDecision",
    "AccessGate",
    "AckKind",
    "Adapter",
    "Attachment",
    "ButtonPress",
    "Capabilities",
    "Chunk",
    "Command",
    "CommandName",
    "Deliver",
    "InboundMessage",
    "Manager",
    "ManagerConfig",
    "ManagerStores",
    "Markup",
    "Platform",
    "QuestionPrompt",
    "ReplyTarget",
    "ReportsHealth",
    "SentRef",
    "conversation_key",
    "parse_command",
    "parse_conversation_key",
    "render_chunks",
]
