"""Service settings: environment first, then `.env`. Tests build `Settings(...)` with `_env_file=None`.

Each field's alias is the variable name from README.md's settings table, so an error names the
variable the operator actually sets.
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
from collections import Counter
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    AliasChoices,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from service.limits import ADMIN_KEY_MIN_LENGTH, check_limit_usd
from switchboard.errors import ConfigError
from switchboard.masking import MASK, mask

__all__ = ["Settings", "load_settings"]


def _env(name: str) -> AliasChoices:
    return AliasChoices(name, name.lower())


def parse_prompts(raw: str) -> tuple[tuple[str, str], ...]:
    """`SWITCHBOARD_SLACK_PROMPTS` as (title, message) pairs; ValueError saying what is wrong."""
    try:
        items = json.loads(raw)
    except ValueError:
        raise ValueError('must be a JSON list of {"title": …, "message": …}') from None
    if not isinstance(items, list) or not 1 <= len(items) <= 4:
        raise ValueError('must be a JSON list of 1 to 4 {"title": …, "message": …}')
    pairs = []
    for item in items:
        if not isinstance(item, dict):
            raise ValueError('each prompt must be {"title": …, "message": …}')
        title, message = item.get("title"), item.get("message")
        if not isinstance(title, str) or not isinstance(message, str):
            raise ValueError('each prompt needs a "title" and a "message" (text)')
        if not title.strip() or not message.strip() or len(title) > 75 or len(message) > 2000:
            raise ValueError("a prompt's title is 1-75 characters and its message 1-2000")
        pairs.append((title.strip(), message.strip()))
    return tuple(pairs)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        populate_by_name=True,
        case_sensitive=False,
        frozen=True,
    )

    redis_url: str | None = Field(None, validation_alias=_env("REDIS_URL"))
    data_dir: Path = Field(Path("./data"), validation_alias=_env("SWITCHBOARD_DATA_DIR"))
    redis_prefix: str = Field("sb:", validation_alias=_env("SWITCHBOARD_REDIS_PREFIX"))
    redis_cluster: bool = Field(False, validation_alias=_env("SWITCHBOARD_REDIS_CLUSTER"))
    """REDIS_URL is one node of a Redis/Valkey Cluster (the client discovers the rest)."""
    inbox_shards: int | None = Field(
        None, ge=1, le=1024, validation_alias=_env("SWITCHBOARD_INBOX_SHARDS")
    )
    """Inbox streams (and orphan index shards); unset: 1 on a single node, 16 on a cluster."""
    redis_min_replicas_ack: int = Field(
        0, ge=0, le=16, validation_alias=_env("SWITCHBOARD_REDIS_MIN_REPLICAS_ACK")
    )
    """An inbox append is acknowledged once WAIT saw this many replicas take it (0: at once)."""
    redis_min_replicas_timeout_ms: int = Field(
        2000, ge=1, le=60_000, validation_alias=_env("SWITCHBOARD_REDIS_MIN_REPLICAS_TIMEOUT_MS")
    )
    """How long an append waits for those replicas; past it the append failed (redelivered)."""

    model: str = Field("demo", validation_alias=_env("SWITCHBOARD_MODEL"))
    system_prompt: str = Field(
        "You are Switchboard, a helpful assistant reachable from chat apps. Answer concisely.",
        validation_alias=_env("SWITCHBOARD_SYSTEM_PROMPT"),
    )
    recursion_limit: int = Field(
        50, ge=5, le=1000, validation_alias=_env("SWITCHBOARD_RECURSION_LIMIT")
    )
    openai_base_url: str | None = Field(None, validation_alias=_env("OPENAI_BASE_URL"))
    openai_api_key: SecretStr | None = Field(None, validation_alias=_env("OPENAI_API_KEY"))
    anthropic_api_key: SecretStr | None = Field(None, validation_alias=_env("ANTHROPIC_API_KEY"))
    env_name: str = Field("dev", validation_alias=_env("SWITCHBOARD_ENV"))
    agent: str = Field("builtin", validation_alias=_env("SWITCHBOARD_AGENT"))
    agent_assistant: str = Field(
        "agent", min_length=1, validation_alias=_env("SWITCHBOARD_AGENT_ASSISTANT")
    )
    mcp_config: Path | None = Field(None, validation_alias=_env("SWITCHBOARD_MCP_CONFIG"))
    bindings: Path | None = Field(None, validation_alias=_env("SWITCHBOARD_BINDINGS"))
    """A YAML or JSON list of rules: which agent answers where and how (`channels.bindings`)."""
    mcp_allowed_vars: str = Field("", validation_alias=_env("SWITCHBOARD_MCP_ALLOWED_VARS"))
    """Comma list of the variables an MCP config sent over HTTP may reference (the file may use
    any): `${OPENAI_API_KEY}` in a PUT would otherwise hand the service's key to any server."""

    http_host: str = Field("127.0.0.1", validation_alias=_env("SWITCHBOARD_HTTP_HOST"))
    trusted_proxies: str = Field("", validation_alias=_env("SWITCHBOARD_TRUSTED_PROXIES"))
    """Comma list of IPs/CIDRs whose `X-Forwarded-For`/`-Proto` the HTTP server believes; empty:
    none, so a client cannot pick the address the admin lockout counts."""
    http_port: int = Field(8080, ge=0, le=65535, validation_alias=_env("SWITCHBOARD_HTTP_PORT"))
    public_url: str = Field(
        "http://127.0.0.1:8080", validation_alias=_env("SWITCHBOARD_PUBLIC_URL")
    )
    access: Literal["linked", "open"] = Field("linked", validation_alias=_env("SWITCHBOARD_ACCESS"))
    admin_key: SecretStr | None = Field(None, validation_alias=_env("SWITCHBOARD_ADMIN_KEY"))
    admin_allow_commands: Literal["on", "off"] = Field(
        "off", validation_alias=_env("SWITCHBOARD_ADMIN_ALLOW_COMMANDS")
    )
    """`on`: the admin API may add or change an MCP stdio command, i.e. run programs on the host;
    and set a `python:` agent in a binding."""
    admin_agent_hosts: str = Field("", validation_alias=_env("SWITCHBOARD_ADMIN_AGENT_HOSTS"))
    """Comma list of `host` or `host:port` a binding's agent URL sent over HTTP may point at,
    besides the hosts of SWITCHBOARD_AGENT and the bindings file."""
    agent_api_keys: str = Field("", validation_alias=_env("SWITCHBOARD_AGENT_API_KEYS"))
    """Comma list of `URL=VARIABLE`: the remote agent at URL is sent $VARIABLE as its API key;
    no other agent is sent any."""
    admin_show_text: Literal["on", "off"] = Field(
        "off", validation_alias=_env("SWITCHBOARD_ADMIN_SHOW_TEXT")
    )
    """`on`: the operator console shows message and reply text in a thread's recent turns."""

    busy: Literal["steer", "collect", "interrupt", "queue", "reject"] = Field(
        "steer", validation_alias=_env("SWITCHBOARD_BUSY")
    )
    """What a message does while its conversation's turn runs; `/queue MODE` per conversation."""
    collect_ms: int = Field(1500, ge=0, le=60_000, validation_alias=_env("SWITCHBOARD_COLLECT_MS"))
    """`collect`: how long the first message of a burst waits for the rest."""
    max_concurrent_turns: int = Field(
        64, ge=2, le=10_000, validation_alias=_env("SWITCHBOARD_MAX_CONCURRENT_TURNS")
    )
    redis_max_connections: int = Field(
        128, ge=4, le=100_000, validation_alias=_env("SWITCHBOARD_REDIS_MAX_CONNECTIONS")
    )
    streaming: Literal["on", "off"] = Field("on", validation_alias=_env("SWITCHBOARD_STREAMING"))
    """`on`: replies appear as they are written; `off`: one final message."""
    max_streams: int = Field(16, ge=1, le=10_000, validation_alias=_env("SWITCHBOARD_MAX_STREAMS"))
    """Replies one worker streams at once; past it a reply is sent whole (typing meanwhile)."""
    feedback: Literal["on", "off"] = Field("on", validation_alias=_env("SWITCHBOARD_FEEDBACK"))
    role: Literal["all", "ingress", "worker"] = Field(
        "all", validation_alias=_env("SWITCHBOARD_ROLE")
    )
    """`ingress`: adapters + HTTP, append to the inbox; `worker`: answer from the inbox."""
    lock_ttl_s: float = Field(30.0, ge=0.5, le=600, validation_alias=_env("SWITCHBOARD_LOCK_TTL_S"))
    """How soon a dead worker's thread lock and inbox entries pass to another worker."""
    max_attempts: int = Field(5, ge=1, le=100, validation_alias=_env("SWITCHBOARD_MAX_ATTEMPTS"))
    """Takes of one queued batch (failures, crashes) before it is answered with an error."""
    queue_max_age_s: float = Field(
        3600, ge=0, le=30 * 86_400, validation_alias=_env("SWITCHBOARD_QUEUE_MAX_AGE_S")
    )
    """A message sent longer ago than this when its turn would start is told so, not answered
    (the service was down, or it waited behind long turns); 0: no bound."""
    rate_limit_per_minute: int = Field(20, ge=1, validation_alias=_env("SWITCHBOARD_RATE_LIMIT"))
    max_input_chars: int = Field(
        32_000, ge=100, validation_alias=_env("SWITCHBOARD_MAX_INPUT_CHARS")
    )
    max_attachment_mb: float = Field(
        10, gt=0, le=1024, validation_alias=_env("SWITCHBOARD_MAX_ATTACHMENT_MB")
    )
    """Largest inbound file fetched and handed to the model; bigger ones get a notice."""
    max_image_pixels: int = Field(
        40_000_000,
        ge=1_000_000,
        le=170_000_000,
        validation_alias=_env("SWITCHBOARD_MAX_IMAGE_PIXELS"),
    )
    """Largest image (width x height, read from its header) decoded for the model; a bigger one
    is only named. Pillow itself refuses about 179 Mpx."""
    decode_workers: int = Field(2, ge=1, le=32, validation_alias=_env("SWITCHBOARD_DECODE_WORKERS"))
    """Child processes one worker decodes images and PDFs in (started on the first file)."""
    decode_memory_mb: int = Field(
        512, ge=64, le=65_536, validation_alias=_env("SWITCHBOARD_DECODE_MEMORY_MB")
    )
    """Memory one worker's concurrent decodes share; an image that alone needs more is refused."""
    decode_cpu_s: float = Field(8, ge=1, le=600, validation_alias=_env("SWITCHBOARD_DECODE_CPU_S"))
    """CPU seconds one file may take to read; past it the decode is killed and the model told."""
    max_audio_seconds: float = Field(
        600, ge=1, le=86_400, validation_alias=_env("SWITCHBOARD_MAX_AUDIO_SECONDS")
    )
    """Longest voice note or audio file sent to be transcribed; a longer one is only named."""
    context_messages: int = Field(
        20, ge=0, le=200, validation_alias=_env("SWITCHBOARD_CONTEXT_MESSAGES")
    )
    """Earlier messages of a conversation a turn may be shown (0: none), newest kept first."""
    context_chars: int = Field(
        8000, ge=500, le=200_000, validation_alias=_env("SWITCHBOARD_CONTEXT_CHARS")
    )
    """Characters of those messages, at most."""
    telegram_observe: int = Field(
        50, ge=0, le=1000, validation_alias=_env("SWITCHBOARD_TELEGRAM_OBSERVE")
    )
    """Recent messages recorded per Telegram group (where the bot sees them all) as context."""
    transcribe_model: str = Field("", validation_alias=_env("SWITCHBOARD_TRANSCRIBE_MODEL"))
    """`openai:<model>` (e.g. `openai:whisper-1`): voice notes reach the model as text."""
    thread_ttl_days: int = Field(30, ge=1, validation_alias=_env("SWITCHBOARD_THREAD_TTL_DAYS"))
    # Checkpoints are the bulk of Redis memory; a thread idle this long is deleted (0 = keep all).
    checkpoint_ttl_days: int = Field(
        90, ge=0, validation_alias=_env("SWITCHBOARD_CHECKPOINT_TTL_DAYS")
    )
    checkpoints_keep: int = Field(
        0, ge=0, le=1000, validation_alias=_env("SWITCHBOARD_CHECKPOINTS_KEEP")
    )
    """Checkpoints a thread keeps before its latest (pruned on every write)."""
    history_tokens: int = Field(
        24_000, ge=0, le=10_000_000, validation_alias=_env("SWITCHBOARD_HISTORY_TOKENS")
    )
    """The built-in agent's history window: past it, older turns are summarised (0 = off)."""
    summary_model: str = Field("", validation_alias=_env("SWITCHBOARD_SUMMARY_MODEL"))
    """`provider:model` writing those summaries; empty: `SWITCHBOARD_MODEL`."""
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        "INFO", validation_alias=_env("SWITCHBOARD_LOG_LEVEL")
    )
    event_loop: Literal["uvloop", "asyncio"] = Field(
        "uvloop", validation_alias=_env("SWITCHBOARD_EVENT_LOOP")
    )
    """`uvloop` (faster I/O, where installed) or the standard library's loop."""
    log_format: Literal["console", "json"] = Field(
        "console", validation_alias=_env("SWITCHBOARD_LOG_FORMAT")
    )

    telegram_bot_token: SecretStr | None = Field(None, validation_alias=_env("TELEGRAM_BOT_TOKEN"))
    telegram_api_base: str = Field(
        "https://api.telegram.org", validation_alias=_env("TELEGRAM_API_BASE")
    )
    telegram_mode: Literal["polling", "webhook"] = Field(
        "polling", validation_alias=_env("TELEGRAM_MODE")
    )
    telegram_webhook_secret: SecretStr | None = Field(
        None, validation_alias=_env("TELEGRAM_WEBHOOK_SECRET")
    )

    slack_bot_token: SecretStr | None = Field(None, validation_alias=_env("SLACK_BOT_TOKEN"))
    slack_app_token: SecretStr | None = Field(None, validation_alias=_env("SLACK_APP_TOKEN"))
    slack_signing_secret: SecretStr | None = Field(
        None, validation_alias=_env("SLACK_SIGNING_SECRET")
    )
    slack_api_base: str = Field("https://slack.com/api/", validation_alias=_env("SLACK_API_BASE"))
    slack_command: str = Field("/switchboard", validation_alias=_env("SWITCHBOARD_SLACK_COMMAND"))
    """The one Slack slash command (`/switchboard help|new|…`); the leading slash is optional."""
    command_prefix: str = Field("!", validation_alias=_env("SWITCHBOARD_COMMAND_PREFIX"))
    """`!stop`: commands where a platform takes every `/word` (inside Slack threads)."""
    slack_prompts: str = Field("", validation_alias=_env("SWITCHBOARD_SLACK_PROMPTS"))
    """Slack's suggested prompts: a JSON list of up to 4 `{"title", "message"}`; empty = ours."""

    discord_bot_token: SecretStr | None = Field(None, validation_alias=_env("DISCORD_BOT_TOKEN"))
    discord_api_base: str = Field(
        "https://discord.com/api/v10", validation_alias=_env("DISCORD_API_BASE")
    )
    discord_gateway_url: str | None = Field(None, validation_alias=_env("DISCORD_GATEWAY_URL"))
    discord_shards: int = Field(
        1, ge=1, le=4096, validation_alias=_env("SWITCHBOARD_DISCORD_SHARDS")
    )  # gateway shards, split across the receiving processes through one lease each
    discord_command_guilds: str = Field(
        "", validation_alias=_env("SWITCHBOARD_DISCORD_COMMAND_GUILDS")
    )
    """Comma list of guild ids: application commands registered there (at once) instead of
    globally (which Discord may take up to an hour to show); for testing a bot."""

    budget_daily_usd: float = Field(
        0.0, allow_inf_nan=False, validation_alias=_env("SWITCHBOARD_BUDGET_DAILY_USD")
    )
    budget_weekly_usd: float = Field(
        0.0, allow_inf_nan=False, validation_alias=_env("SWITCHBOARD_BUDGET_WEEKLY_USD")
    )
    model_price: str | None = Field(None, validation_alias=_env("SWITCHBOARD_MODEL_PRICE"))

    @field_validator("redis_prefix")
    @classmethod
    def _prefix_not_empty(cls, value: str) -> str:
        if not value or any(c in value for c in "{} \t\n"):
            raise ValueError("must be non-empty, without spaces or braces")
        return value

    @field_validator("admin_key")
    @classmethod
    def _admin_key_long(cls, value: SecretStr | None) -> SecretStr | None:
        """A short or repetitive key is guessable over HTTP; empty means the admin API is off.
        The message never quotes the key."""
        key = value.get_secret_value() if value is not None else ""
        if 0 < len(key) < ADMIN_KEY_MIN_LENGTH:
            raise ValueError(
                f"must be at least {ADMIN_KEY_MIN_LENGTH} characters (e.g. `openssl rand -hex 16`)"
            )
        if key and _predictable(key):
            raise ValueError(
                f"is too predictable (at least {_ADMIN_KEY_MIN_DISTINCT} different characters, "
                "none dominating, no repeated pattern): use a random key, e.g. "
                "`openssl rand -hex 16`"
            )
        return value

    @field_validator("slack_command")
    @classmethod
    def _slash_command(cls, value: str) -> str:
        name = "/" + value.strip().lstrip("/")
        if not _SLACK_COMMAND.match(name):
            raise ValueError(
                "must be a Slack command name: up to 32 lowercase letters, digits, - or _ "
                "(the leading / is optional), e.g. /switchboard"
            )
        return name

    @field_validator("slack_prompts")
    @classmethod
    def _prompts_list(cls, value: str) -> str:
        if value.strip():
            parse_prompts(value)
        return value

    @property
    def slack_prompt_pairs(self) -> tuple[tuple[str, str], ...] | None:
        """(title, message) of each suggested prompt; None = the built-in ones."""
        return parse_prompts(self.slack_prompts) if self.slack_prompts.strip() else None

    @field_validator("command_prefix")
    @classmethod
    def _prefix_chars(cls, value: str) -> str:
        if not _COMMAND_PREFIX.match(value):
            raise ValueError("must be 1-3 punctuation characters other than / @ # < > : (e.g. !)")
        return value

    @field_validator("discord_command_guilds")
    @classmethod
    def _guild_ids(cls, value: str) -> str:
        ids = [g.strip() for g in value.split(",") if g.strip()]
        bad = [g for g in ids if not g.isdigit()]
        if bad:
            raise ValueError(f"not a guild id: {bad[0]!r} (expected ID,ID of digits)")
        return ",".join(ids)

    @property
    def discord_command_guild_ids(self) -> tuple[int, ...]:
        return tuple(int(g) for g in self.discord_command_guilds.split(",") if g)

    @field_validator("trusted_proxies")
    @classmethod
    def _proxy_networks(cls, value: str) -> str:
        for item in (i.strip() for i in value.split(",")):
            if item:
                try:
                    ipaddress.ip_network(item, strict=False)
                except ValueError:
                    raise ValueError(
                        "must be a comma list of IP addresses or CIDR networks"
                    ) from None
        return value

    @property
    def trusted_proxy_list(self) -> list[str]:
        """The entries as uvicorn reads them (a network with host bits, `10.0.0.1/8`, as
        `10.0.0.0/8`: uvicorn would take it for a host name and trust nothing)."""
        items = [i.strip() for i in self.trusted_proxies.split(",") if i.strip()]
        return [str(ipaddress.ip_network(i, strict=False)) if "/" in i else i for i in items]

    @field_validator("mcp_allowed_vars")
    @classmethod
    def _variable_names(cls, value: str) -> str:
        names = [n.strip() for n in value.split(",") if n.strip()]
        bad = [n for n in names if not _VAR_NAME.match(n)]
        if bad:
            raise ValueError(f"not a variable name: {bad[0]!r} (expected NAME,OTHER_NAME)")
        return ",".join(names)

    @property
    def mcp_allowed_var_names(self) -> frozenset[str]:
        return frozenset(n for n in self.mcp_allowed_vars.split(",") if n)

    @field_validator("admin_agent_hosts")
    @classmethod
    def _agent_hosts(cls, value: str) -> str:
        hosts = [h.strip().lower() for h in value.split(",") if h.strip()]
        bad = [h for h in hosts if not _AGENT_HOST.match(h)]
        if bad:
            raise ValueError(f"not a host: {bad[0]!r} (expected host or host:port, no scheme)")
        return ",".join(hosts)

    @property
    def admin_agent_host_names(self) -> frozenset[str]:
        return frozenset(h for h in self.admin_agent_hosts.split(",") if h)

    @field_validator("agent_api_keys")
    @classmethod
    def _agent_keys(cls, value: str) -> str:
        pairs = [p.strip() for p in value.split(",") if p.strip()]
        for pair in pairs:
            url, _, name = pair.rpartition("=")
            if not url.startswith(("http://", "https://")) or not _VAR_NAME.match(name):
                raise ValueError(
                    "expected URL=VARIABLE,URL=VARIABLE (the variable holding that server's key)"
                )
        return ",".join(pairs)

    @property
    def agent_api_key_vars(self) -> dict[str, str]:
        """URL -> the variable holding its API key."""
        pairs = (p.rpartition("=") for p in self.agent_api_keys.split(",") if p)
        return {url: name for url, _, name in pairs}

    @field_validator("budget_daily_usd", "budget_weekly_usd")
    @classmethod
    def _budget_range(cls, value: float) -> float:
        return check_limit_usd(value)

    @field_validator("public_url", "telegram_api_base", "slack_api_base", "discord_api_base")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value

    @field_validator("model")
    @classmethod
    def _model_spec(cls, value: str) -> str:
        if value != "demo" and ":" not in value:
            raise ValueError("must be 'demo' or 'provider:model', e.g. openai:gpt-4o-mini")
        return value

    @field_validator("agent")
    @classmethod
    def _agent_spec(cls, value: str) -> str:
        """The shape only, so settings stay cheap to import (the CLI never loads `agent`);
        `agent.parse_agent_spec` checks the rest when the service builds the backend."""
        value = value.strip() or "builtin"
        if not _AGENT.match(value):
            raise ValueError(
                "expected 'builtin', 'python:pkg.module:attr' or an http(s):// URL of a "
                "LangGraph server"
            )
        return value

    @field_validator("model_price")
    @classmethod
    def _price_pair(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        _parse_price(value)
        return value.strip()

    @property
    def price_per_million(self) -> tuple[float, float] | None:
        """(input, output) USD per million tokens, or None when no price is set."""
        return _parse_price(self.model_price) if self.model_price else None

    @model_validator(mode="after")
    def _channels_complete(self) -> Settings:
        """A half-configured channel stops start-up naming what is missing; otherwise it would
        silently not start (and a webhook without its secret would fail only seconds later)."""
        problem = _channel_problem(self) or _retention_problem(self) or _store_problem(self)
        if problem:
            raise ValueError(problem)
        return self

    @property
    def inbox_shard_count(self) -> int:
        """SWITCHBOARD_INBOX_SHARDS, or its default: 16 spread over a cluster's masters, else
        1 (today's single `sb:inbox`, so an existing deployment keeps its keys)."""
        return self.inbox_shards or (16 if self.redis_cluster else 1)

    @property
    def telegram_enabled(self) -> bool:
        return self.telegram_bot_token is not None

    @property
    def slack_enabled(self) -> bool:
        return self.slack_bot_token is not None and (
            self.slack_app_token is not None or self.slack_signing_secret is not None
        )

    @property
    def discord_enabled(self) -> bool:
        return self.discord_bot_token is not None

    @property
    def any_platform(self) -> bool:
        return self.telegram_enabled or self.slack_enabled or self.discord_enabled

    def public_view(self) -> dict[str, object]:
        """Effective settings with every secret shown as `***` (for the admin endpoint and logs)."""
        out: dict[str, object] = {}
        for name, field in type(self).model_fields.items():
            value = getattr(self, name)
            alias = field.validation_alias
            key = alias.choices[0] if isinstance(alias, AliasChoices) else name
            if isinstance(value, SecretStr):
                out[str(key)] = MASK
            elif isinstance(value, Path):
                out[str(key)] = mask(str(value), key=str(key))
            else:
                out[str(key)] = mask(value, key=str(key))
        return out


def _parse_price(value: str) -> tuple[float, float]:
    """`IN,OUT` in USD per million tokens, both finite and >= 0."""
    parts = [p.strip() for p in value.split(",")]
    try:
        if len(parts) != 2:
            raise ValueError
        prices = float(parts[0]), float(parts[1])
    except ValueError:
        raise ValueError(
            "must be IN,OUT: USD per million input and output tokens, e.g. 0.15,0.60"
        ) from None
    if not all(0 <= p < float("inf") for p in prices):
        raise ValueError("prices must be finite and not negative")
    return prices


_AGENT = re.compile(
    r"^(builtin|python:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*|https?://[^\s/]+\S*)$", re.I
)
_WEBHOOK_SECRET = re.compile(r"^[A-Za-z0-9_-]{1,256}$")
_VAR_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_AGENT_HOST = re.compile(r"^(\[[0-9a-f:.]+\]|[a-z0-9_.-]+)(:\d{1,5})?$")
_SLACK_COMMAND = re.compile(r"^/[a-z0-9][a-z0-9_-]{0,30}$")
_COMMAND_PREFIX = re.compile(r"^[!$%&*+,.;=?^~|-]{1,3}$")


# Thresholds a random key of the shortest length passes: of a million `openssl rand -hex 12`
# keys (24 hex digits) one shows only 6 different digits and none scores under 56 bits.
_ADMIN_KEY_MIN_DISTINCT = 6
_ADMIN_KEY_MIN_BITS = 56.0


def _predictable(key: str) -> bool:
    """Whether a long enough key is still a guess: few characters (`kkkk…`), one character
    dominating, or a shorter pattern repeated (`password1234password1234`)."""
    n = len(key)
    bits = -n * sum(c / n * math.log2(c / n) for c in Counter(key).values())  # Shannon, whole key
    repeated = any(key[p:] == key[:-p] for p in range(1, n // 2 + 1))
    return len(set(key)) < _ADMIN_KEY_MIN_DISTINCT or bits < _ADMIN_KEY_MIN_BITS or repeated


def _set(value: SecretStr | None) -> bool:
    return value is not None and bool(value.get_secret_value())


def _retention_problem(s: Settings) -> str | None:
    """Checkpoints must outlive the conversation mapping, or a chat that is still mapped to its
    thread would silently lose its history."""
    if s.checkpoint_ttl_days and s.checkpoint_ttl_days < s.thread_ttl_days:
        return (
            f"SWITCHBOARD_CHECKPOINT_TTL_DAYS ({s.checkpoint_ttl_days}) must be 0 (keep) or at "
            f"least SWITCHBOARD_THREAD_TTL_DAYS ({s.thread_ttl_days})"
        )
    return None


def _store_problem(s: Settings) -> str | None:
    """The embedded store is one node; a cluster is always an external one."""
    if s.redis_cluster and not s.redis_url:
        return (
            "SWITCHBOARD_REDIS_CLUSTER=true needs REDIS_URL (one node of the cluster); "
            "the embedded store is a single node"
        )
    if s.redis_cluster and s.redis_min_replicas_ack:
        return (
            "SWITCHBOARD_REDIS_MIN_REPLICAS_ACK needs one primary (REDIS_URL or a "
            "redis+sentinel:// URL): WAIT cannot follow an append across a cluster's nodes"
        )
    return None


def _channel_problem(s: Settings) -> str | None:
    """What a half-configured channel lacks, in one line naming the variables."""
    slack_transport = _set(s.slack_app_token) or _set(s.slack_signing_secret)
    if _set(s.slack_bot_token) and not slack_transport:
        return (
            "SLACK_BOT_TOKEN is set but Slack also needs SLACK_APP_TOKEN (Socket Mode, an xapp- "
            "token) or SLACK_SIGNING_SECRET (Events API at /slack/events)"
        )
    if slack_transport and not _set(s.slack_bot_token):
        given = "SLACK_APP_TOKEN" if _set(s.slack_app_token) else "SLACK_SIGNING_SECRET"
        return f"{given} is set but SLACK_BOT_TOKEN (the xoxb- bot token) is not"
    if _set(s.telegram_bot_token) and s.telegram_mode == "webhook":
        secret = s.telegram_webhook_secret
        if not _set(secret):
            return (
                "TELEGRAM_MODE=webhook needs TELEGRAM_WEBHOOK_SECRET "
                "(1-256 characters of A-Z, a-z, 0-9, _ and -; e.g. `openssl rand -hex 32`)"
            )
        if secret is not None and not _WEBHOOK_SECRET.match(secret.get_secret_value()):
            return "TELEGRAM_WEBHOOK_SECRET must be 1-256 characters of A-Z, a-z, 0-9, _ and -"
    return None


def load_settings(**overrides: Any) -> Settings:
    """Read settings once at start-up; a bad value becomes one `ConfigError` line naming it."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        first = exc.errors()[0]
        message = str(first.get("msg", "invalid")).removeprefix("Value error, ")
        loc = first.get("loc")
        if not loc:  # a check across settings: its message names the variables itself
            raise ConfigError(message) from None
        name = str(loc[0])
        field = Settings.model_fields.get(name)
        if field is not None and isinstance(field.validation_alias, AliasChoices):
            name = str(field.validation_alias.choices[0])
        raise ConfigError(f"invalid setting {name.upper()}: {message}") from None
