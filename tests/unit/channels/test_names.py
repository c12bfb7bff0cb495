"""The display-name cache: one lookup per person while fresh, bounded in size."""

from __future__ import annotations

from channels.names import Names

__all__: list[str] = []


def test_a_name_is_kept_for_its_time_and_then_looked_up_again() -> None:
    now = [0.0]
    names = Names(ttl_s=60, clock=lambda: now[0])
    names.put("T1:U1", "Ann")
    now[0] = 59.0
    assert names.get("T1:U1") == "Ann"
    now[0] = 60.0
    assert names.get("T1:U1") is None and len(names) == 0


def test_past_its_size_the_least_recently_used_name_goes() -> None:
    names = Names(max_entries=2)
    names.put("a", "A")
    names.put("b", "B")
    assert names.get("a") == "A"
    names.put("c", "C")
    assert (names.get("a"), names.get("b"), names.get("c")) == ("A", None, "C")


async def test_lookup_fetches_at_most_its_budget_and_keeps_what_it_found() -> None:
    names = Names()
    names.put("T1:U1", "Ann")
    fetched: list[str] = []

    async def fetch(user: str) -> str | None:
        fetched.append(user)
        return {"U2": "Bob"}.get(user)

    found = await names.lookup("T1", ["U1", "U2", "U3", "U4"], fetch, most=2)
    assert found == {"U1": "Ann", "U2": "Bob"}
    assert fetched == ["U2", "U3"]
    assert names.get("T1:U2") == "Bob" and names.get("T1:U3") is None
