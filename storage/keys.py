"""The one place that formats Redis keys. Every key starts with the configurable prefix (`sb:`).

Redis Cluster (`SWITCHBOARD_REDIS_CLUSTER=true`) runs a Lua script or a MULTI only when all its
keys hash to one slot, so every key group that one script or transaction touches shares a hash
tag (the part in `{}`), and keys outside a group are only ever touched one at a time:

- `{<thread_id>}`: everything of one agent thread (lock, queue, checkpoints, warnings, question).
  A script touches only the keys passed in its KEYS (Redis 7 functions and cluster nodes refuse
  any other), so all of a thread's pending warnings live in one hash, never in per-run keys.
- `{<platform>:<place>}`: the messages observed in one group chat (or forum topic), one zset.
- `{<platform>:<chat>}`: the dedupe ids of one message; `{<platform>:<user>}`: one user's usage;
  `{<platform>:<sender>}`: one sender's rate window and its notice mark.
- `{feedback}`: every vote on an answer and its time index, written and trimmed by one script
  (votes are rare: a person pressing a button).
- `{access}`: all accounts, API keys, link tokens and links. Creating a link checks the token,
  the target and the account's index in one script, so they must share a slot; this is
  low-volume data (one EXISTS per message for the link gate), and one slot holds it easily.
- The inbox is `SWITCHBOARD_INBOX_SHARDS` streams (`shards.py`): one (`sb:inbox`, the single-node
  default) or N tagged ones, `sb:inbox:{<N>.<i>.<salt>}`, whose tags spread them evenly over the
  slot range (16 on a cluster), so every master carries a share of the intake. The orphan index
  is sharded the same way (`sb:orphans` or `sb:orphans:{<tag>}`); each script touches one shard.
- `sb:inbox:layouts`, `sb:bindings`, `sb:failures`, `sb:console:…`, `sb:warn:index`, `sb:qid:…`, `sb:conv:…`, `sb:msg:…` and
  `sb:notice:…` are single keys updated on their own (or by non-transactional pipelines, which a
  cluster client splits by slot).

| key                                          | type   | TTL                        | owner            |
|----------------------------------------------|--------|----------------------------|------------------|
| `sb:inbox` or `sb:inbox:{<N>.<i>.<salt>}`    | stream | none (finished entries deleted) | inbox.py    |
| `sb:inbox:layouts`                           | set    | none (one member per shard count used) | inbox.py |
| `sb:orphans` or `sb:orphans:{<N>.<i>.<salt>}` | zset  | none (members removed)     | orphans.py       |
| `sb:lease:<name>`                            | string | 30 s, renewed by the owner | leases.py        |
| `sb:lease-members:<group>`                   | zset   | 30 s, refreshed by beats   | leases.py        |
| `sb:pace:{<bot>}:<scope>`                    | zset   | the window, slid           | send_windows.py  |
| `sb:dedupe:{<platform>:<chat>}:<id>`          | string | 24 h (DEDUPE_TTL_S)        | dedupe.py        |
| `sb:conv:<conversation_key>`                 | string | 30 d sliding (thread TTL)  | thread_map.py    |
| `sb:msg:<platform>:<chat_id>:<message_id>`   | string | 30 d sliding; 50 per thread | thread_map.py   |
| `sb:{<thread_id>}:lock`                      | string | 30 s, extended while held  | locks.py, thread_queue.py |
| `sb:{<thread_id>}:stop`                      | string | 10 min (STOP_TTL_S)        | locks.py         |
| `sb:{<thread_id>}:q`                         | zset   | 1 day, refreshed on write  | thread_queue.py  |
| `sb:{<thread_id>}:qmsg`                      | hash   | 1 day, refreshed on write  | thread_queue.py  |
| `sb:{<thread_id>}:done`                      | zset   | 1 day, trimmed on write    | thread_queue.py  |
| `sb:{<thread_id>}:tries`                     | hash   | 1 day, refreshed on write  | thread_queue.py  |
| `sb:{<thread_id>}:ledger`                    | hash   | 1 day (deleted at finish)  | thread_queue.py  |
| `sb:{<thread_id>}:busy`                      | string | 30 d, refreshed on use     | thread_queue.py  |
| `sb:{<thread_id>}:warn`                      | hash   | 1 h backstop               | warnings.py      |
| `sb:warn:index`                              | zset   | none (members evicted)     | warnings.py      |
| `sb:{<thread_id>}:question`                  | string | the question's expiry      | questions.py     |
| `sb:{<thread_id>}:replies`                   | zset   | 30 d (thread TTL), newest 50 | thread_map.py  |
| `sb:{<thread_id>}:remote`                    | string | 30 d sliding (thread TTL)  | remote_threads.py |
| `sb:{<thread_id>}:ctx:mark`                  | string | thread TTL, set per turn   | context.py       |
| `sb:{<thread_id>}:ctx:cache`                 | string | 10 min (CONTEXT_CACHE_TTL_S) | context.py     |
| `sb:observed:{<platform>:<place>}`           | zset   | 48 h, refreshed on write   | context.py       |
| `sb:qid:<question_id>`                       | string | the question's expiry      | questions.py     |
| `sb:rate:{<platform>:<sender_id>}`           | zset   | rate window                | ratelimit.py     |
| `sb:rate:notice:{<platform>:<sender_id>}`    | string | rate window                | ratelimit.py     |
| `sb:{<thread_id>}:cp:idx`                    | zset   | checkpoint TTL (90 d), whole thread; pruned on write | checkpoint.py |
| `sb:{<thread_id>}:cp:chk`                    | hash   | checkpoint TTL (90 d), whole thread; pruned on write | checkpoint.py |
| `sb:{<thread_id>}:cp:blob`                   | hash   | checkpoint TTL (90 d), whole thread; pruned on write | checkpoint.py |
| `sb:{<thread_id>}:cp:wr`                     | hash   | checkpoint TTL (90 d), whole thread; pruned on write | checkpoint.py |
| `sb:{<thread_id>}:cp:widx`                   | zset   | checkpoint TTL (90 d), whole thread; pruned on write | checkpoint.py |
| `sb:{<thread_id>}:cp:ridx`                   | zset   | checkpoint TTL (90 d), whole thread; pruned on write | checkpoint.py |
| `sb:{access}:account:<name>`                 | hash   | none                       | accounts.py      |
| `sb:{access}:accounts`                       | zset   | none (score = created at)  | accounts.py      |
| `sb:{access}:apikey:<sha256 of key>`         | string | none (deleted on revoke)   | accounts.py      |
| `sb:{access}:linktoken:<token>`              | hash   | 24 h (TOKEN_RECORD_TTL_S)  | links.py         |
| `sb:{access}:linkpending:<kind>:<platform>:<target>` | string | token life + 1 min | links.py         |
| `sb:{access}:linkrate:<scope>:<platform>:<id>` | string | rate window              | links.py         |
| `sb:{access}:link:<link_id>`                 | hash   | none                       | links.py         |
| `sb:{access}:linked:<kind>:<platform>:<target>` | hash | none                      | links.py         |
| `sb:{access}:acctlinks:<account>`            | set    | none                       | links.py         |
| `sb:{access}:links`                          | set    | none                       | links.py         |
| `sb:notice:<platform>:<chat_id>`             | string | 1 h (NOTICE_TTL_S)         | notices.py       |
| `sb:bindings`                                | hash   | none (one key: the rules in force) | bindings_store.py |
| `sb:failures`                                | list   | 7 d after the last push, capped at 1000 | failure_log.py |
| `sb:console:<sha256 of session id>`          | string | 8 h (CONSOLE_SESSION_TTL_S) | console_sessions.py |
| `sb:{feedback}:votes`                        | hash   | none (votes past 90 d or 100,000 dropped on write) | feedback.py |
| `sb:{feedback}:recent`                       | zset   | none (trimmed with the votes) | feedback.py   |
| `sb:answer:{<platform>:<chat>}:<message_id>` | string | 30 d (ANSWER_TTL_S)        | feedback.py      |
| `sb:usage:{<platform>:<user>}:day:<date>`     | string | until next 00:00 UTC       | usage.py         |
| `sb:usage:{<platform>:<user>}:week:<iso week>`| string | until next Monday 00:00 UTC | usage.py        |
| `sb:usage:{<platform>:<user>}:turn:<turn_id>` | string | 1 h (TURN_MARK_TTL_S)      | usage.py         |
| `sb:usage:{<platform>:<user>}:limits`         | hash   | none (admin override)      | usage.py         |
| `sb:usage:{<platform>:<user>}:notice:<chat>:<window>:<id>` | string | until the window ends | usage.py |

Values are UTF-8 strings or JSON documents; the owning module documents its value shape.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Keys"]


@dataclass(frozen=True, slots=True)
class Keys:
    prefix: str = "sb:"

    def dedupe(self, platform: str, provider_id: str, scope: str = "") -> str:
        """The scope (the chat) is the hash tag: every id of one message shares a slot, so one
        script claims them all (an empty scope still gives one tag per platform)."""
        return f"{self.prefix}dedupe:{{{platform}:{scope}}}:{provider_id}"

    def pace(self, owner: str, scope: str) -> str:
        """A shared send window; all of one owner's (bot's) windows share a hash slot."""
        return f"{self.prefix}pace:{{{owner}}}:{scope}"

    def lease(self, name: str) -> str:
        return f"{self.prefix}lease:{name}"

    def lease_members(self, group: str) -> str:
        """Processes competing for a group of leases (a bot's shards), scored by last beat."""
        return f"{self.prefix}lease-members:{group}"

    def inbox(self, tag: str = "") -> str:
        """The inbox stream; with more than one shard, the shard of hash tag `tag` (shards.py)."""
        return f"{self.prefix}inbox:{{{tag}}}" if tag else f"{self.prefix}inbox"

    def inbox_layouts(self) -> str:
        """The shard counts processes announced, so a new count drains the old streams."""
        return f"{self.prefix}inbox:layouts"

    def orphans(self, tag: str = "") -> str:
        """Threads whose queue waits on a holder; the sweeper checks them once they are due."""
        return f"{self.prefix}orphans:{{{tag}}}" if tag else f"{self.prefix}orphans"

    def question_thread(self, question_id: str) -> str:
        return f"{self.prefix}qid:{question_id}"

    def conversation(self, conversation_key: str) -> str:
        return f"{self.prefix}conv:{conversation_key}"

    def message(self, platform: str, chat_id: str, message_id: str) -> str:
        return f"{self.prefix}msg:{platform}:{chat_id}:{message_id}"

    def thread(self, thread_id: str, suffix: str) -> str:
        """A key owned by one thread; the hash tag keeps all of them in one cluster slot."""
        return f"{self.prefix}{{{thread_id}}}:{suffix}"

    def lock(self, thread_id: str) -> str:
        return self.thread(thread_id, "lock")

    def stop(self, thread_id: str) -> str:
        return self.thread(thread_id, "stop")

    def pending_warnings(self, thread_id: str) -> str:
        """One hash per thread: run id → that run's pending loop warnings (a JSON list)."""
        return self.thread(thread_id, "warn")

    def warnings_index(self) -> str:
        return f"{self.prefix}warn:index"

    def question(self, thread_id: str) -> str:
        return self.thread(thread_id, "question")

    def replies(self, thread_id: str) -> str:
        """The thread's newest bot reply ids (`<platform>\\0<chat>\\0<message>`, scored by time);
        mappings of replies it lets go are deleted (thread_map.py)."""
        return self.thread(thread_id, "replies")

    def remote_thread(self, thread_id: str) -> str:
        """The LangGraph server thread id behind one of our threads (remote agent backend)."""
        return self.thread(thread_id, "remote")

    def context_mark(self, thread_id: str) -> str:
        """How far the thread's agent has seen its conversation (`<previous>|<at>`)."""
        return self.thread(thread_id, "ctx:mark")

    def context_cache(self, thread_id: str) -> str:
        """The conversation context last read from the platform for this thread (JSON)."""
        return self.thread(thread_id, "ctx:cache")

    def observed(self, platform: str, place: str) -> str:
        """Recent messages seen in a group chat (or topic): score = message id, member = JSON."""
        return f"{self.prefix}observed:{{{platform}:{place}}}"

    def rate(self, platform: str, sender_id: str) -> str:
        """Tagged by sender: one script slides the window and sets the notice mark."""
        return f"{self.prefix}rate:{{{platform}:{sender_id}}}"

    def rate_notice(self, platform: str, sender_id: str) -> str:
        return f"{self.prefix}rate:notice:{{{platform}:{sender_id}}}"

    def checkpoint(self, thread_id: str, suffix: str) -> str:
        """One of a thread's six checkpoint keys: pruned on write to the latest checkpoint plus
        SWITCHBOARD_CHECKPOINTS_KEEP, expired whole after SWITCHBOARD_CHECKPOINT_TTL_DAYS."""
        return self.thread(thread_id, f"cp:{suffix}")

    def access(self, suffix: str) -> str:
        """An account, API key, link token or link: all in the `{access}` slot, because creating
        and removing links checks and writes several of them in one script."""
        return f"{self.prefix}{{access}}:{suffix}"

    def account(self, name: str) -> str:
        return self.access(f"account:{name}")

    def accounts(self) -> str:
        return self.access("accounts")

    def api_key(self, digest: str) -> str:
        return self.access(f"apikey:{digest}")

    def link_token(self, token: str) -> str:
        return self.access(f"linktoken:{token}")

    def link_pending(self, kind: str, platform: str, target_id: str) -> str:
        return self.access(f"linkpending:{kind}:{platform}:{target_id}")

    def link_rate(self, scope: str, platform: str, scope_id: str) -> str:
        return self.access(f"linkrate:{scope}:{platform}:{scope_id}")

    def link(self, link_id: str) -> str:
        return self.access(f"link:{link_id}")

    def linked(self, kind: str, platform: str, target_id: str) -> str:
        return self.access(f"linked:{kind}:{platform}:{target_id}")

    def account_links(self, account: str) -> str:
        return self.access(f"acctlinks:{account}")

    def links_index(self) -> str:
        return self.access("links")

    def notice(self, platform: str, chat_id: str) -> str:
        return f"{self.prefix}notice:{platform}:{chat_id}"

    def feedback(self, suffix: str) -> str:
        """The votes on answers (`votes` hash, `recent` zset): one slot, one script writes both."""
        return f"{self.prefix}{{feedback}}:{suffix}"

    def answer(self, platform: str, chat_id: str, message_id: str) -> str:
        """Which run a bot message answered (JSON `[thread, run, asker]`), for reaction votes."""
        return f"{self.prefix}answer:{{{platform}:{chat_id}}}:{message_id}"

    def console_session(self, digest: str) -> str:
        """An operator console login, named by the digest of its id (never the id itself)."""
        return f"{self.prefix}console:{digest}"

    def bindings(self) -> str:
        """The routing and channel-policy rules in force for the fleet (`bindings_store.py`)."""
        return f"{self.prefix}bindings"

    def failures(self) -> str:
        """The recent failures users were given a reference id for (newest first, capped)."""
        return f"{self.prefix}failures"

    def usage(self, platform: str, user_id: str, suffix: str) -> str:
        """A key of one user's spend; the hash tag lets one script update both windows."""
        return f"{self.prefix}usage:{{{platform}:{user_id}}}:{suffix}"

    def usage_day(self, platform: str, user_id: str, day_id: str) -> str:
        return self.usage(platform, user_id, f"day:{day_id}")

    def usage_week(self, platform: str, user_id: str, week_id: str) -> str:
        return self.usage(platform, user_id, f"week:{week_id}")

    def usage_turn(self, platform: str, user_id: str, turn_id: str) -> str:
        return self.usage(platform, user_id, f"turn:{turn_id}")

    def usage_limits(self, platform: str, user_id: str) -> str:
        return self.usage(platform, user_id, "limits")

    def usage_notice(self, platform: str, user_id: str, chat_id: str, window: str) -> str:
        """`window` is `<kind>:<window id>`, e.g. `daily:2025-01-31`."""
        return self.usage(platform, user_id, f"notice:{chat_id}:{window}")
