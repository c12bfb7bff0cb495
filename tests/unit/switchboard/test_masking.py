"""The one masking function: every secret shape issue 35 found is hidden, ordinary values are not."""

from __future__ import annotations

import json
from typing import Any

import pytest

from switchboard.masking import MASK, is_secret_name, mask, mask_text

SECRET = "s3cr3tV4lue9XqZ"  # short and word-like on purpose: only its position gives it away
PEM = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n"
    "-----END OPENSSH PRIVATE KEY-----"
)
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk"

# (case, value, key it sits under, the secret that must not show)
HIDDEN: list[tuple[str, Any, str, str]] = [
    # by key name
    *(
        (f"key named {name}", {name: SECRET}, "", SECRET)
        for name in (
            "key",
            "token",
            "secret",
            "password",
            "passwd",
            "bearer",
            "authorization",
            "Authorization",
            "credential",
            "credentials",
            "api_key",
            "apiKey",
            "X-Api-Key",
            "apikey",
            "auth",
            "cookie",
            "private_key",
            "OPENAI_API_KEY",
            "db_password",
            "session",
        )
    ),
    ("env value", {"env": {"PLAIN": SECRET}}, "", SECRET),
    ("header value", {"headers": {"X-Team": SECRET}}, "", SECRET),
    ("number in env", {"env": {"PIN": 482913}}, "", "482913"),
    # by value shape
    ("OpenAI key", "sk-proj-AbC123dEf456GhI789", "", "AbC123dEf456GhI789"),
    ("Anthropic key", "sk-ant-api03-xYz987", "", "api03-xYz987"),
    ("Slack bot token", "xoxb-1234567890-abcdefABCDEF", "", "abcdefABCDEF"),
    ("Slack user token", "xoxp-1234567890-abcdefABCDEF", "", "abcdefABCDEF"),
    ("Slack app token", "xapp-1-A0123-4567-abcdef", "", "4567-abcdef"),
    ("GitHub token", "ghp_16C7e42F292c6912E7710c838347Ae178B4a", "", "16C7e42F292c"),
    ("AWS key id", "AKIAIOSFODNN7EXAMPLE", "", "IOSFODNN7"),
    ("JWT", JWT, "", "dBjftJeZ4CVPmB92K27uhbUJU1p1r"),
    ("Telegram bot token", "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", "", "AAHdqTcvCH1"),
    ("Bearer in text", f"Bearer {SECRET}", "", SECRET),
    ("lower-case bearer", f"bearer {SECRET}", "", SECRET),
    ("Basic auth", "Basic dXNlcjpwYXNzd29yZA==", "", "dXNlcjpwYXNzd29yZA"),
    ("header line", f"X-Api-Key: {SECRET}", "", SECRET),
    ("name=value pair", f"DB_PASSWORD={SECRET} psql", "", SECRET),
    ("long high-entropy string", "aB3dE5gH7jK9mN1pQ3sT5vW7", "", "aB3dE5gH7jK9mN1pQ3sT5vW7"),
    ("hex key", "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b", "", "9f86d081884c7d659a2f"),
    # URLs
    ("URL password", f"postgres://app:{SECRET}@db.internal:5432/app", "", SECRET),
    ("URL lone user (a token)", f"https://{SECRET}@git.example.com/repo.git", "", SECRET),
    (
        "URL user part that is a key",
        "https://ghp_16C7e42F292c6912E7710c838347Ae178B4a:x-oauth-basic@github.com/o/r.git",
        "",
        "16C7e42F292c",
    ),
    (
        "header split into words in a command",
        f"curl -H Authorization: Bearer {SECRET}",
        "command",
        SECRET,
    ),
    ("query token", f"https://mcp.example.com/mcp?token={SECRET}", "", SECRET),
    ("query api_key", f"https://mcp.example.com/mcp?region=eu&api_key={SECRET}", "", SECRET),
    ("query value of any name", f"https://mcp.example.com/mcp?k={SECRET}", "", SECRET),
    ("fragment", f"https://app.example.com/cb#access_token={SECRET}", "", SECRET),
    (
        "token in a URL path (Telegram)",
        "https://api.telegram.org/bot123456:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/getMe",
        "",
        "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw",
    ),
    (
        "token in a URL path (Slack webhook)",
        "https://hooks.slack.com/services/T0123ABCD/B0123ABCD/abcDEF123ghiJKL456mnoPQR",
        "",
        "abcDEF123ghiJKL456mnoPQR",
    ),
    (
        "OpenAI key in a URL path",
        "https://proxy.example.com/sk-abcdef0123456789/v1",
        "",
        "abcdef0123456789",
    ),
    # command lines
    ("--api-key KEY as two args", ["--api-key", SECRET, "--verbose"], "args", SECRET),
    ("--token KEY as two args", ["server.py", "--token", SECRET], "args", SECRET),
    ("--api-key=KEY", ["--api-key=" + SECRET], "args", SECRET),
    ("--db=postgres://user:pass@host", [f"--db=postgres://user:{SECRET}@host/db"], "args", SECRET),
    ("bare sk- argument", ["sk-abcdef0123456789"], "args", "abcdef0123456789"),
    ("Bearer argument", ["-H", f"Authorization: Bearer {SECRET}"], "args", SECRET),
    ("Bearer as its own argument", ["Bearer", f"{SECRET}"], "args", SECRET),
    (
        "secret flag inside command",
        f"node server.js --api-key {SECRET} --verbose",
        "command",
        SECRET,
    ),
    ("env assignment inside command", f"API_TOKEN={SECRET} npx server", "command", SECRET),
    ("URL inside command", f"mcp-proxy https://u:{SECRET}@h.example.com", "command", SECRET),
    # issue 43: a PEM after a secret flag, secrets inside JSON text, curl's -u, `//user:pw@host`
    ("PEM after a secret flag", ["--private-key", PEM], "args", "b3BlbnNzaC1rZXkt"),
    ("PEM glued to a secret flag", [f"--key={PEM}"], "args", "b3BlbnNzaC1rZXkt"),
    ("PEM on its own", PEM, "", "AAAABG5vbmU"),
    ("PEM cut short", PEM.split("\n-----END")[0], "note", "AAAABG5vbmU"),
    ("JSON in a string", f'{{"api_key": "{SECRET}", "region": "eu"}}', "", SECRET),
    ("JSON in an argument", [f'--config={{"password":"{SECRET}"}}'], "args", SECRET),
    ("single-quoted pairs", f"{{'token': '{SECRET}'}}", "note", SECRET),
    ("escaped JSON in JSON", f'{{\\"token\\": \\"{SECRET}\\"}}', "note", SECRET),
    ("number under a secret JSON name", '{"pin_code": 1, "password": 482913}', "", "482913"),
    ("curl -u user:password", ["curl", "-u", f"alice:{SECRET}", "https://x.test"], "args", SECRET),
    ("curl -uuser:password", ["curl", f"-ualice:{SECRET}"], "args", SECRET),
    ("curl --user=user:password", [f"--user=alice:{SECRET}"], "args", SECRET),
    ("curl -u inside a command", f"curl -u alice:{SECRET} https://x.test", "command", SECRET),
    ("scheme-relative URL", f"//alice:{SECRET}@db.internal:5432/x", "", SECRET),
    ("scheme-relative URL argument", ["--db", f"//alice:{SECRET}@db.internal/x"], "args", SECRET),
    ("scheme-relative URL in prose", f"mirror at //alice:{SECRET}@h.test/", "note", SECRET),
    (
        "an MCP server as a whole",
        {
            "command": f"run --password {SECRET}",
            "args": ["--key", SECRET],
            "env": {"A": SECRET},
        },
        "",
        SECRET,
    ),
]

SHOWN: list[tuple[str, Any, str]] = [
    ("ordinary path", "/usr/local/lib/python3.11/site-packages/mcp_server/main.py", ""),
    ("path in args", ["/srv/data", "./Filesystem-Server-v2", "--verbose"], "args"),
    ("npm package", ["-y", "@modelcontextprotocol/server-filesystem", "/home/me"], "args"),
    ("plain command", "npx", "command"),
    ("command with ordinary flags", "python -m server --port 8080 --verbose", "command"),
    ("hostname", "mcp.example.com", ""),
    ("URL without credentials", "https://mcp.example.com/v1/mcp", "url"),
    ("short words", "hello world, basic setup", ""),
    ("model name", "openai:gpt-4o-mini-2024-07-18", "SWITCHBOARD_MODEL"),
    ("model name with date", "anthropic:claude-3-5-sonnet-20241022", "model"),
    ("camel-case identifier", "ThisIsACamelCaseIdentifierName2", "name"),
    ("variable reference under a secret key", "$OPENAI_API_KEY", "api_key"),
    ("braced reference in env", {"env": {"TOKEN": "${VAULT_TOKEN}"}}, ""),
    ("bearer with a reference", "Bearer ${SEARCH_KEY}", "note"),
    ("token count", {"SWITCHBOARD_HISTORY_TOKENS": 24000, "max_tokens": 512}, ""),
    ("boolean under a secret-looking key", {"private": False}, ""),
    ("numbers and nulls", {"port": 8080, "enabled": True, "cwd": None}, ""),
    ("timestamp", "2024-01-01T00:00:00Z", "created"),
    ("transport", {"transport": "streamable_http", "type": "sse"}, ""),
    ("unbuffered python, a user name without a password", ["-u", "server.py", "-U", "bob"], "args"),
    ("JSON without secret names", '{"region": "eu", "private": false, "api_key": "$KEY"}', ""),
    ("double slashes without credentials", "see //docs, a//b and // notes", "note"),
]


@pytest.mark.parametrize(
    ("value", "key", "secret"), [c[1:] for c in HIDDEN], ids=[c[0] for c in HIDDEN]
)
def test_every_secret_shape_is_masked(value: Any, key: str, secret: str) -> None:
    shown = json.dumps(mask(value, key=key))
    assert secret not in shown
    assert MASK in shown


@pytest.mark.parametrize(("value", "key"), [c[1:] for c in SHOWN], ids=[c[0] for c in SHOWN])
def test_ordinary_values_are_shown_as_they_are(value: Any, key: str) -> None:
    assert mask(value, key=key) == value


def test_masking_keeps_the_structure_and_the_non_secret_parts() -> None:
    server = {
        "command": "node",
        "args": ["server.js", "--api-key", SECRET, "--db=postgres://bob:pw@db/app", "--verbose"],
        "url": "https://bob:pw@mcp.example.com/mcp?token=t&region=eu",
    }
    assert mask(server) == {
        "command": "node",
        "args": ["server.js", "--api-key", MASK, "--db=postgres://bob:***@db/app", "--verbose"],
        "url": "https://bob:***@mcp.example.com/mcp?token=***&region=***",
    }


def test_masking_never_changes_its_input() -> None:
    value = {"env": {"A": SECRET}, "args": ["--token", SECRET]}
    before = json.dumps(value)
    mask(value)
    assert json.dumps(value) == before


def test_an_unparsable_url_is_masked_whole() -> None:
    assert SECRET not in mask_text(f"http://[{SECRET}/x")


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("SWITCHBOARD_ADMIN_KEY", True),
        ("--api-key", True),
        ("xApiKey", True),
        ("DBPASSWORD", True),
        ("SLACK_SIGNING_SECRET", True),
        ("SWITCHBOARD_PUBLIC_URL", False),
        ("monkey", False),
        ("author", False),
        ("verbose", False),
        ("SLACK_API_BASE", False),
    ],
)
def test_secret_names_are_told_by_their_words(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret
