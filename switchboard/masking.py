"""The one masking function for everything an admin reads: settings, MCP configs, bindings.

`mask(value, key=...)` returns a copy fit to show, with `***` wherever a secret may be. It lives
in the leaf because every layer shows some configuration and all of them must hide the same
shapes; a second, weaker copy is how secrets leak. It errs towards masking: a hidden value costs
an admin a look at the file, a shown one costs a rotated key.

What is masked:

- by key name: a string under a key whose words name a credential (`key`, `token`, `secret`,
  `password`, `passwd`, `bearer`, `authorization`, `auth`, `credential`, `api_key`, `apikey`,
  `cookie`, `private`, `session`, `signature`, …), and every value inside an `env` or `headers`
  mapping (where credentials live);
- by shape, anywhere in a string: `sk-…`, Slack `xox?-…`/`xapp-…`, GitHub, GitLab, AWS, Google,
  Hugging Face, Stripe and Telegram tokens, JWTs, PEM blocks (even cut short), `Bearer …`/
  `Basic …`, `name=value` pairs and JSON `"name": value` pairs (also single-quoted or escaped
  inside another JSON string) with a secret-named name, `Name: value` header lines, long
  high-entropy strings;
- in URLs (also scheme-relative `//user:pw@host`): the password of the user-info, and the user
  part too when it stands alone or looks like a key (`https://TOKEN:x-oauth-basic@…`), every
  query value, the fragment, and path segments shaped like tokens (`/bot123:ABC…/`, webhook
  secrets);
- in command lines (`command`, `args`): the argument after a secret-named flag (`--api-key KEY`,
  even a PEM starting with dashes), the value of `--secret-flag=VALUE`, the password of curl's
  `-u`/`--user`/`--proxy-user user:password`, and every argument by shape
  (`--db=postgres://u:p@h`).

A value that is only a variable reference (`$NAME` or `${NAME}`) is shown: it names a secret
without holding one. Numbers and booleans are masked only inside `env`/`headers`, so counts such
as `SWITCHBOARD_HISTORY_TOKENS=24000` stay readable.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

__all__ = ["MASK", "is_secret_name", "mask", "mask_text"]

MASK = "***"

_REFERENCE = re.compile(r"^\$(?:[A-Za-z_][A-Za-z0-9_]*|\{[A-Za-z_][A-Za-z0-9_]*\})$")
_SECRET_CONTAINERS = frozenset({"env", "headers"})
_ARGV_KEYS = frozenset({"args", "argv", "command", "cmd"})

# Whole words of a key name (split at `_`, `-`, `.`, spaces and camelCase humps).
_SECRET_WORDS = frozenset(
    {
        "key",
        "keys",
        "apikey",
        "token",
        "tokens",
        "secret",
        "secrets",
        "password",
        "passwd",
        "passphrase",
        "pass",
        "pwd",
        "pw",
        "bearer",
        "authorization",
        "auth",
        "credential",
        "credentials",
        "creds",
        "cookie",
        "cookies",
        "private",
        "session",
        "signature",
        "dsn",
        "jwt",
        "otp",
    }
)
# Substrings that name a credential even inside one run-together word (`xApiKey`, `DBPASSWORD`).
_SECRET_PARTS = re.compile(
    r"api_?key|apikey|passw|passphrase|secret|token|credential|authoriz|cookie|privatekey", re.I
)
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")

_URL = re.compile(
    r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>`]+"
    r"|(?<![^\s\"'=(<,\[])//[^\s/@\"'<>`]+@[^\s\"'<>`]*"  # scheme-relative, with credentials
)
_AUTH_SCHEME = re.compile(
    r"\b(?:(?i:bearer)|Basic(?=\s+[A-Za-z0-9+/=]{8,}))(\s+)([^\s\"',;]+)"
)  # `Basic` only before a base64 blob, so "Basic setup" stays prose
_SHAPES = re.compile(
    r"""
      \bsk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_-]{8,}       # OpenAI, Anthropic, …
    | \bxox[abeoprs]-[A-Za-z0-9-]{6,}                         # Slack bot/user/…
    | \bxapp-[A-Za-z0-9-]{6,}                                 # Slack app-level
    | \bgh[pousr]_[A-Za-z0-9]{16,}                            # GitHub
    | \bgithub_pat_[A-Za-z0-9_]{16,}
    | \bglpat-[A-Za-z0-9_-]{16,}                              # GitLab
    | \b(?:AKIA|ASIA)[0-9A-Z]{16}\b                           # AWS access key id
    | \bAIza[0-9A-Za-z_-]{30,}                                # Google
    | \bhf_[A-Za-z0-9]{16,}                                   # Hugging Face
    | \b[rsp]k_(?:live|test)_[A-Za-z0-9]{8,}                  # Stripe
    | \beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*  # JWT
    | \b\d{5,12}:[A-Za-z0-9_-]{30,}                           # Telegram bot token
    | \b[MNO][A-Za-z0-9_-]{23,}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,}  # Discord bot token
    | -----BEGIN[A-Z0-9 ]*-----[\s\S]*?(?:-----END[A-Z0-9 ]*-----|$)  # PEM, even cut short
    """,
    re.X,
)
# `"name": "value"` (JSON, also `'…'` and backslash-escaped JSON inside a JSON string).
_JSON_PAIR = re.compile(
    r"""(?P<q>\\*["'])(?P<name>[A-Za-z0-9_.-]+)(?P=q)(?P<sep>\s*:\s*)"""
    r"""(?:(?P<vq>\\*["'])(?P<value>(?:(?!(?P=vq))(?:\\.|[^\\\n]))*)(?P=vq)"""
    r"""|(?P<bare>[^\s,}\]"'\\]+))"""
)
_PAIR = re.compile(r"(?<![A-Za-z0-9_.-])([A-Za-z0-9_.-]+)(\s*=\s*)([^\s&;,\"']+)")
_HEADER_LINE = re.compile(r"^(\s*[A-Za-z0-9_-]+\s*:\s*)(\S.*)$")
_RUN = re.compile(r"[A-Za-z0-9_+=~/-]{20,}")
_SCHEMES = frozenset({"bearer", "basic"})
_FLAG = re.compile(r"^--?[A-Za-z0-9]")  # `-k`, `--key`; not `-----BEGIN …`, not `-`
_LONG_FLAG = re.compile(r"^--[A-Za-z0-9]")
_USER_FLAGS = frozenset({"-u", "--user", "-U", "--proxy-user"})  # curl's `user:password`
_HEX = re.compile(r"^[0-9a-fA-F-]{32,}$")


def is_secret_name(name: str) -> bool:
    """Whether a key, flag or parameter name names a credential (`OPENAI_API_KEY`, `--token`)."""
    if _SECRET_PARTS.search(name):
        return True
    return any(word.lower() in _SECRET_WORDS for word in _WORDS.findall(name))


def mask(value: Any, *, key: str = "") -> Any:
    """A copy of `value` (JSON-like: mappings, lists, scalars) with every secret as `***`.

    `key` is the name `value` sits under, when it has one: it decides masking by name."""
    return _mask(value, key=key, hidden=key.lower() in _SECRET_CONTAINERS)


def mask_text(text: str) -> str:
    """One free-standing string with every secret shape in it replaced by `***`."""
    if _REFERENCE.match(text):
        return text
    line = _HEADER_LINE.match(text)
    if line and "://" not in line.group(1) and is_secret_name(line.group(1).strip(" \t:")):
        return f"{line.group(1)}{MASK}" if not _REFERENCE.match(line.group(2).strip()) else text
    text = _JSON_PAIR.sub(_mask_json_pair, text)
    pieces: list[str] = []
    done = 0
    for url in _URL.finditer(text):
        pieces += [_mask_plain(text[done : url.start()]), _mask_url(url.group(0))]
        done = url.end()
    pieces.append(_mask_plain(text[done:]))
    return "".join(pieces)


def _mask_plain(text: str) -> str:
    text = _AUTH_SCHEME.sub(_mask_scheme, text)
    text = _SHAPES.sub(MASK, text)
    text = _PAIR.sub(_mask_pair, text)
    return _RUN.sub(lambda m: MASK if _random(m.group(0)) else m.group(0), text)


def _mask_url(url: str) -> str:
    """A URL fit to show (see the module doc); anything unparsable is masked whole."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        userinfo, at, host = netloc.rpartition("@")
        if at:
            user, colon, _password = userinfo.partition(":")
            plain = colon and user and not _SHAPES.search(user) and not _random(user)
            netloc = f"{user}:{MASK}@{host}" if plain else f"{MASK}@{host}"
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        query = "&".join(f"{quote(k, safe='$')}={_hide(v) if v else ''}" for k, v in pairs)
        path = "/".join(_mask_segment(s) for s in parts.path.split("/"))
        fragment = MASK if parts.fragment else ""
        return urlunsplit((parts.scheme, netloc, path, query, fragment))
    except ValueError:
        return MASK


def _mask(value: Any, *, key: str, hidden: bool) -> Any:
    if isinstance(value, Mapping):
        return {
            k: _mask(v, key=str(k), hidden=hidden or str(k).lower() in _SECRET_CONTAINERS)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        if key.lower() in _ARGV_KEYS and all(isinstance(v, str) for v in value):
            return _mask_argv(list(value))
        return [_mask(v, key=key, hidden=hidden) for v in value]
    if isinstance(value, str):
        if hidden or is_secret_name(key):
            return _hide(value)
        if key.lower() in _ARGV_KEYS:
            return _mask_command_line(value)
        return mask_text(value)
    if hidden and value is not None:
        return MASK
    return value


def _hide(value: str) -> str:
    """The value as shown under a secret name: `***`, unless it is only a `$VAR` reference."""
    return value if _REFERENCE.match(value) or not value else MASK


def _mask_argv(argv: list[str]) -> list[str]:
    out: list[str] = []
    secret_next = user_next = False
    for arg in argv:
        is_flag = bool(_FLAG.match(arg))
        if secret_next and not _LONG_FLAG.match(arg):  # `--key -----BEGIN …`: the key, no flag
            scheme = arg.lower() in _SCHEMES  # `Authorization: Bearer KEY`: KEY is still to come
            out.append(arg if scheme else _hide(arg))
            secret_next = scheme
            continue
        if user_next and not is_flag:
            out.append(_mask_user_password(arg))
            user_next = False
            continue
        if arg.startswith("-u") and not arg.startswith("--") and ":" in arg:  # `-uuser:password`
            out.append(f"-u{_mask_user_password(arg[2:])}")
            continue
        flag, eq, val = arg.partition("=")
        if is_flag and is_secret_name(flag.lstrip("-")):
            out.append(f"{flag}={_hide(val)}" if eq else arg)
            secret_next = not eq  # `--api-key KEY`: the key is the next argument
            continue
        if flag in _USER_FLAGS:  # `curl -u user:password`, `--user=user:password`
            out.append(f"{flag}={_mask_user_password(val)}" if eq else arg)
            user_next = not eq
            continue
        # `-H "Authorization: Bearer KEY"` split into words: the scheme or header name, then KEY
        secret_next = arg.lower() in _SCHEMES or (arg.endswith(":") and is_secret_name(arg[:-1]))
        out.append(arg if secret_next else mask_text(arg))
    return out


def _mask_user_password(value: str) -> str:
    """`user:password` as `user:***`; a value without a password is masked as any other."""
    user, colon, password = value.partition(":")
    return f"{user}:{_hide(password)}" if colon and password else mask_text(value)


def _mask_command_line(command: str) -> str:
    """A whole command line in one string: masked word by word, as `_mask_argv` would."""
    pieces = re.split(r"(\s+)", command)
    words = pieces[::2]
    masked = _mask_argv(words)
    pieces[::2] = masked
    return "".join(pieces)


def _mask_scheme(match: re.Match[str]) -> str:
    scheme_and_space = match.group(0)[: match.start(2) - match.start(0)]
    return f"{scheme_and_space}{_hide(match.group(2))}"


def _mask_pair(match: re.Match[str]) -> str:
    name, sep, value = match.groups()
    if is_secret_name(name.lstrip("-")) and value != MASK:
        return f"{name}{sep}{_hide(value)}"
    return match.group(0)


def _mask_json_pair(match: re.Match[str]) -> str:
    name, value, bare = match.group("name"), match.group("value"), match.group("bare")
    if not is_secret_name(name):
        return match.group(0)
    if bare is not None:
        if bare in ("true", "false", "null") or _REFERENCE.match(bare):
            return match.group(0)
        return f"{match.group('q')}{name}{match.group('q')}{match.group('sep')}{MASK}"
    quote_ = match.group("vq")
    head = f"{match.group('q')}{name}{match.group('q')}{match.group('sep')}"
    return f"{head}{quote_}{_hide(value)}{quote_}"


def _mask_segment(segment: str) -> str:
    if not segment or _REFERENCE.match(segment):
        return segment
    if _SHAPES.search(segment) or re.match(r"^bot\d+:", segment) or _random(segment):
        return MASK
    return segment


def _random(text: str) -> bool:
    """A long string that looks generated rather than written: a key, not a word or a path."""
    if len(text) < 20 or MASK in text:
        return False
    if _HEX.match(text) and sum(c.isdigit() for c in text) >= 4:
        return True  # hex keys and UUIDs: only two character classes, but never prose
    classes = sum(
        (
            any(c.islower() for c in text),
            any(c.isupper() for c in text),
            any(c.isdigit() for c in text),
        )
    )
    if classes < 2:
        return False
    parts = [p for p in re.split(r"[-_.]+", text) if p]
    if len(parts) >= 4 and max(map(len, parts)) <= 8 and sum(map(str.isupper, text)) <= 2:
        return False  # `gpt-4o-mini-2024-07-18`, dates, versions: short parts, not a key
    humps = _WORDS.findall(text)
    if len("".join(humps)) / max(1, len(humps)) >= 3.5:
        return False  # `Filesystem-Server-v2`, `MyServer_2024`, paths: words, not a key
    return _entropy(text) >= 3.5


def _entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    counts: dict[str, int] = {}
    for char in text:
        counts[char] = counts.get(char, 0) + 1
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())
