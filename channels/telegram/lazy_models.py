"""aiogram without its import-time validator build: about 75 MB less resident memory.

`aiogram.types` ends by calling `model_rebuild()` on each of its ~440 pydantic models to resolve
their forward references. A rebuild builds the model's validator and serializer right there, and
each validator holds its own copy of every model it reaches (a `Message` reaches nearly all of
them): about 120 MB, half of a Telegram-only Switchboard. aiogram's models already ask for
`defer_build`; that loop defeats it.

`install()` (run by `channels.telegram` before anything imports aiogram) wraps three aiogram
modules' loaders:

- while `aiogram.types` imports, a `model_rebuild(_types_namespace=...)` call records the types
  namespace instead of building;
- after it, every Telegram type gets that namespace as its `__pydantic_parent_namespace__` (the
  namespace pydantic resolves names in when a deferred model builds on first use);
- the Bot API method models (`TelegramMethod`) and the `Response[...]` envelope get `defer_build`
  and the same namespace.

Each model then builds the first time it validates: in practice `Update`, `Message`, `User` and
the dozen methods the adapter calls (a few MB). If aiogram changes shape (no `TelegramObject`, no
rebuild loop), the hooks step aside and aiogram builds eagerly as before: more memory, same
behaviour. A rebuild call of a shape the hook does not know (no `_types_namespace`) is not
swallowed: it goes through to pydantic at once, as aiogram made it (eager, from its frame).
`tests/unit/channels/telegram/test_lazy_models.py` builds every type and method with the
recorded namespace, so a forward reference that cannot resolve fails a test, not a chat, and
imports aiogram through a hook that sees a changed rebuild call to prove that it steps aside.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["install", "installed", "types_namespace"]

_TYPES, _TYPES_BASE, _METHODS, _METHODS_BASE = (
    "aiogram.types",
    "aiogram.types.base",
    "aiogram.methods",
    "aiogram.methods.base",
)
_state: dict[str, Any] = {"installed": False, "namespace": None}


def installed() -> bool:
    """True when the hooks ran: aiogram's models were left to build on first use."""
    return bool(_state["installed"]) and _state["namespace"] is not None


def types_namespace() -> dict[str, Any] | None:
    """The namespace aiogram resolves its models' forward references in (None before import)."""
    namespace = _state["namespace"]
    return dict(namespace) if namespace is not None else None


def _all_subclasses(root: type[BaseModel]) -> list[type[BaseModel]]:
    seen: list[type[BaseModel]] = []
    stack = [root]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in seen:
                seen.append(sub)
                stack.append(sub)
    return seen


def _give_namespace(classes: Sequence[type[BaseModel]], namespace: dict[str, Any]) -> None:
    for cls in classes:
        own = cls.__dict__.get("__pydantic_parent_namespace__")
        if not own:  # module-level classes have none; share one dict rather than copy it
            cls.__pydantic_parent_namespace__ = namespace
        else:
            cls.__pydantic_parent_namespace__ = {**namespace, **own}


def _after_types_base(module: ModuleType) -> None:
    """Replace `TelegramObject.model_rebuild` for the rest of `aiogram.types`' import."""
    root = getattr(module, "TelegramObject", None)
    if root is None or not root.model_config.get("defer_build"):
        return

    rebuild = root.model_rebuild.__func__  # pydantic's own

    def record(cls: type[BaseModel], /, **kwargs: Any) -> Any:
        namespace = kwargs.get("_types_namespace")
        if namespace is None:  # not the call we know: step aside, aiogram's rebuild runs now
            # one frame more (this one) between pydantic and the caller's names
            kwargs["_parent_namespace_depth"] = kwargs.get("_parent_namespace_depth", 2) + 1
            return rebuild(cls, **kwargs)
        if _state["namespace"] is None:
            _state["namespace"] = namespace
        return None

    root.model_rebuild = classmethod(record)


def _after_types(module: ModuleType) -> None:
    """The import's rebuild loop is over: restore pydantic's rebuild, hand out the namespace."""
    base = sys.modules.get(_TYPES_BASE)
    root = getattr(base, "TelegramObject", None)
    if root is None or "model_rebuild" not in root.__dict__:
        return
    del root.model_rebuild
    namespace = _state["namespace"]
    if namespace is not None:
        _give_namespace([root, *_all_subclasses(root)], namespace)


def _after_methods_base(module: ModuleType) -> None:
    """Defer the method models and the response envelope too (before any method is defined)."""
    if _state["namespace"] is None:
        return
    for name in ("TelegramMethod", "Response"):
        cls = getattr(module, name, None)
        if cls is not None:
            cls.model_config["defer_build"] = True
            _give_namespace([cls], _state["namespace"])


def _after_methods(module: ModuleType) -> None:
    base = sys.modules.get(_METHODS_BASE)
    root = getattr(base, "TelegramMethod", None)
    if root is not None and _state["namespace"] is not None:
        _give_namespace(_all_subclasses(root), _state["namespace"])


_AFTER: dict[str, Callable[[ModuleType], None]] = {
    _TYPES_BASE: _after_types_base,
    _TYPES: _after_types,
    _METHODS_BASE: _after_methods_base,
    _METHODS: _after_methods,
}


class _Loader(importlib.abc.Loader):
    """The module's own loader, then our step."""

    def __init__(self, inner: importlib.abc.Loader, after: Callable[[ModuleType], None]) -> None:
        self._inner = inner
        self._after = after

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._inner.exec_module(module)
        self._after(module)


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self) -> None:
        self._found: set[str] = set()

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        after = _AFTER.get(fullname)
        if after is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _Loader(spec.loader, after)
        self._found.add(fullname)
        if self._found >= _AFTER.keys():  # every hooked module found: step out of later imports
            sys.meta_path[:] = [f for f in sys.meta_path if f is not self]
        return spec


def install() -> None:
    """Hook aiogram's import (once; a no-op when aiogram is already imported)."""
    if _state["installed"] or _TYPES in sys.modules:
        return
    _state["installed"] = True
    sys.meta_path.insert(0, _Finder())
