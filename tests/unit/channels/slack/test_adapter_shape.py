"""The Slack adapter's shape: it satisfies the Adapter protocol and refuses half a config."""

from __future__ import annotations

import pytest

from channels.adapter import Adapter
from channels.message import InboundMessage, Platform
from channels.slack import SlackAdapter
from switchboard.errors import ConfigError


async def _deliver(msg: InboundMessage) -> None:
    return None


def test_slack_adapter_satisfies_the_adapter_protocol() -> None:
    adapter = SlackAdapter(bot_token="xoxb-1", signing_secret="s", deliver=_deliver)
    assert isinstance(adapter, Adapter)
    assert adapter.platform is Platform.SLACK


@pytest.mark.parametrize(
    ("kwargs", "variable"),
    [
        ({"bot_token": "", "app_token": "xapp-1"}, "SLACK_BOT_TOKEN"),
        ({"bot_token": "xoxb-1"}, "SLACK_APP_TOKEN"),
    ],
)
def test_incomplete_configuration_names_the_missing_variable(
    kwargs: dict[str, str], variable: str
) -> None:
    with pytest.raises(ConfigError, match=variable):
        SlackAdapter(deliver=_deliver, **kwargs)
