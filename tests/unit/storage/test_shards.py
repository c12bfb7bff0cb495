"""How the inbox is split: one shard keeps today's keys, N shards spread evenly over the slot
range (so over a cluster's masters), a route always lands in the same shard, and entry ids of
two shards never collide once made sortable."""

from __future__ import annotations

import pytest
from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

from storage import Keys
from storage.shards import Layout, others, shard_tag, tag_count
from switchboard.state import sortable_entry_id

__all__: list[str] = []

K = Keys("sb:")


def test_one_shard_keeps_the_keys_of_an_unsharded_deployment() -> None:
    layout = Layout(1)
    assert layout.tags == ("",)
    assert layout.tag_for("slack:C1") == ""
    assert K.inbox(layout.tag_for("slack:C1")) == "sb:inbox"
    assert K.orphans(layout.tag_for("thread")) == "sb:orphans"


@pytest.mark.parametrize("count", [2, 3, 16, 64])
def test_shard_i_hashes_into_the_ith_part_of_the_slot_range(count: int) -> None:
    for i, tag in enumerate(Layout(count).tags):
        slot = key_slot(K.inbox(tag).encode())
        assert slot * count // REDIS_CLUSTER_HASH_SLOTS == i
        assert key_slot(K.orphans(tag).encode()) == slot  # the orphans shard sits beside it
        assert tag_count(tag) == count


def test_sixteen_shards_put_five_or_six_on_each_of_three_equal_masters() -> None:
    third = REDIS_CLUSTER_HASH_SLOTS / 3
    per_master = [0, 0, 0]
    for tag in Layout(16).tags:
        per_master[int(key_slot(K.inbox(tag).encode()) // third)] += 1
    assert sorted(per_master) == [5, 5, 6]


def test_a_route_always_lands_in_the_same_shard_and_routes_use_every_shard() -> None:
    layout = Layout(16)
    assert (
        layout.tag_for("tg:42")
        == Layout(16).tag_for("tg:42")
        == shard_tag(16, layout.tags.index(layout.tag_for("tg:42")))
    )
    assert {layout.tag_for(f"tg:{n}") for n in range(500)} == set(layout.tags)


def test_sortable_ids_of_two_shards_differ_and_keep_arrival_order() -> None:
    a, b = sortable_entry_id("1700-0@16.1.3"), sortable_entry_id("1700-0@16.2.0")
    assert a != b
    assert sortable_entry_id("1699-5@16.9.1") < a < sortable_entry_id("1701-0@16.0.7")
    assert sortable_entry_id(a) == a
    assert sortable_entry_id("9-10") == "000000000000009-00000010"


def test_announced_layouts_other_than_ours_are_drained() -> None:
    assert others([b"1", b"16", b"junk"], 16) == (1,)
    assert others([b"16"], 16) == ()


def test_a_layout_has_at_least_one_shard() -> None:
    with pytest.raises(ValueError):
        Layout(0)
