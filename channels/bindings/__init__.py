"""Bindings: which agent answers where, and how the bot behaves in each place
(`SWITCHBOARD_BINDINGS`). `load.py` reads and checks the file, `rules.py` matches a conversation,
`resolver.py` does it for a message, `explain.py` says why."""

from channels.bindings.explain import explain
from channels.bindings.load import BindingsError, load_bindings, parse_bindings
from channels.bindings.policy import DEFAULT_POLICY, PlacePolicies, PlacePolicy, PolicyFor
from channels.bindings.resolver import AccountOf, BindingResolver, subject_of
from channels.bindings.rules import NO_BINDING, Bindings, Effective, Rule, Subject

__all__ = [
    "DEFAULT_POLICY",
    "NO_BINDING",
    "AccountOf",
    "BindingResolver",
    "Bindings",
    "BindingsError",
    "Effective",
    "PlacePolicies",
    "PlacePolicy",
    "PolicyFor",
    "Rule",
    "Subject",
    "explain",
    "load_bindings",
    "parse_bindings",
    "subject_of",
]
