"""The `redis+sentinel://` URL form: Sentinels, service and database read back, defaults filled,
and a malformed URL refused without echoing it (it may hold a password)."""

from __future__ import annotations

import pytest

from storage.connection import describe
from storage.sentinel import SentinelUrl, is_sentinel_url, parse_sentinel_url
from switchboard.errors import StorageError

__all__: list[str] = []


def test_sentinels_service_and_database_are_read_back() -> None:
    url = "redis+sentinel://:s%2Fcret@10.0.0.1:26379,10.0.0.2:26380/mymaster/2"
    assert parse_sentinel_url(url) == SentinelUrl(
        sentinels=(("10.0.0.1", 26379), ("10.0.0.2", 26380)),
        service="mymaster",
        db=2,
        password="s/cret",
    )


def test_the_port_and_database_default_like_redis_py() -> None:
    spec = parse_sentinel_url("redis+sentinel://sentinel-a,sentinel-b:5000/svc")
    assert spec.sentinels == (("sentinel-a", 26379), ("sentinel-b", 5000))
    assert (spec.service, spec.db, spec.password) == ("svc", 0, None)


@pytest.mark.parametrize(
    "url",
    [
        "redis+sentinel://:hunter2@host:26379",  # no service
        "redis+sentinel://:hunter2@host:port/svc/0",
        "redis+sentinel://:hunter2@host:26379/svc/db/extra",
        "redis://:hunter2@host:6379/0",
    ],
)
def test_a_malformed_url_is_refused_without_its_password(url: str) -> None:
    with pytest.raises(StorageError) as caught:
        parse_sentinel_url(url)
    assert "hunter2" not in str(caught.value)


def test_describe_names_the_sentinels_never_the_password() -> None:
    url = "redis+sentinel://:hunter2@a:1,b:2/svc/0"
    assert is_sentinel_url(url)
    assert describe(url) == "a:1,b:2 (service svc)"
