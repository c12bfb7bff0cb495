"""A thread's queue of unanswered messages and the lock of the one worker answering them.

Every message of a thread goes through its queue, in inbox order; whoever holds the thread lock
answers the queue front in batches and removes a batch only once its reply was sent. A holder that
dies leaves its batch in the queue, so the next holder answers it: nothing is taken out before it
is answered, and nothing answered is answered again (`done` remembers answered entries for a day).

| key                     | type   | value                                          | TTL                  |
|-------------------------|--------|------------------------------------------------|----------------------|
| `sb:{<thread>}:lock`    | string | the holder's fencing token                     | 30 s, extended       |
| `sb:{<thread>}:q`       | zset   | inbox entry ids, score 0 (lexical = arrival)   | 1 day, on each write |
| `sb:{<thread>}:qmsg`    | hash   | entry id → the message (JSON, channel-owned)   | 1 day, on each write |
| `sb:{<thread>}:done`    | zset   | answered entry id → when (unix s)              | 1 day, trimmed       |
| `sb:{<thread>}:tries`   | hash   | entry id → `<takes>|<token>` (batch front)     | 1 day, on each write |
| `sb:{<thread>}:ledger`  | hash   | `rec` → the batch's recorded reply (channel-owned bytes); `r:<n>` → receipt of piece n | 1 day |
| `sb:{<thread>}:busy`    | string | the conversation's busy mode (`/queue MODE`)    | 30 days, on each take |

**Attempts.** Each take of the lock (submit, resume, or finish moving on to the next batch)
counts one attempt for the queue's front entry, once per token (a resend counts nothing), so the
manager can give up on a batch that keeps failing or crashing its worker; `finish` forgets the
counts of what it answered.

**Reply ledger.** Before the first send of a batch's answer, the holder records the answer
(`record`, fenced by the lock token), and each piece the platform accepted gets a receipt. A
batch taken again after a crash, a lost lock or a Redis error comes back with the ledger, so its
holder sends only the pieces without a receipt and never runs the model again. `finish` deletes
the ledger with the batch, atomically.

**Busy modes.** `submit` applies the conversation's mode (its `busy` key, else the default it is
given): `reject` refuses a message while another holder works; every other mode queues it, and
the slot tells the caller the mode so it can steer, interrupt or collect. `absorb` hands the
holder what queued behind its batch (steering), fenced by its token; absorbed entries stay in the
queue until `finish` answers them with the batch, so a crash leaves them to the next holder.

`submit` also takes the lock when it is free and, with it, clears a stale `/stop` request and the
loop warnings of earlier runs (no run of this thread is active once the lock is ours); it returns
the open clarification question for the batch to answer. Every script is idempotent per call
(the entry id and the caller's token), so a resend after a lost reply changes nothing.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, cast

import redis.asyncio as redis

from storage.decoding import as_text
from storage.failures import redis_errors
from storage.keys import Keys
from storage.locks import LOCK_TTL_S, lock_ms
from storage.scripts import ScriptCall, run_scripts
from switchboard.state import (
    BusyMode,
    Ledger,
    Lock,
    QueuedItem,
    Slot,
    SlotState,
    ThreadState,
    parse_question,
    sortable_entry_id,
)

if TYPE_CHECKING:
    from redis.commands.core import AsyncScript
    from redis.typing import EncodableT

    from storage.checkpoint import RedisCheckpointSaver

__all__ = [
    "DONE_TTL_S",
    "MODE_TTL_S",
    "QUEUE_CAP",
    "QUEUE_TTL_S",
    "Ledger",
    "QueuedItem",
    "Slot",
    "SlotState",
    "ThreadQueue",
    "ThreadState",
    "sortable_entry_id",
]

QUEUE_CAP = 10  # unanswered messages per thread, the running batch included
QUEUE_TTL_S = 24 * 3600  # outlives any turn and any crash recovery; refreshed on every write
MODE_TTL_S = 30 * 24 * 3600  # as long as the conversation's thread mapping; refreshed on use
DONE_TTL_S = 24 * 3600  # as long as a platform may redeliver (Telegram keeps updates 24 h)

# Shared tail of submit and resume: with the lock ours, clear the stale stop request and other
# runs' warnings, and return the queue (oldest first) with the open question.
_TAKE = """
local function take_lock(token, ttl)
  redis.call('SET', KEYS[1], token, 'PX', ttl)
  redis.call('DEL', KEYS[5], KEYS[7])
end
local function queue()
  local ids = redis.call('ZRANGE', KEYS[2], 0, -1)
  local out = {}
  for i, id in ipairs(ids) do
    out[#out + 1] = id
    out[#out + 1] = redis.call('HGET', KEYS[3], id) or ''
  end
  return out, ids[1]
end
-- One more attempt for the front entry, counted once per token.
local function attempt(front, token, ttl)
  if not front then return 0 end
  local raw = redis.call('HGET', KEYS[8], front)
  local n, last = 0, ''
  if raw then
    local sep = string.find(raw, '|', 1, true)
    if sep then n, last = tonumber(string.sub(raw, 1, sep - 1)) or 0, string.sub(raw, sep + 1) end
  end
  if last ~= token then
    n = n + 1
    redis.call('HSET', KEYS[8], front, n .. '|' .. token)
    redis.call('EXPIRE', KEYS[8], ttl)
  end
  return n
end
local function taken(token, ttl)
  local items, front = queue()
  return {'run', redis.call('ZCARD', KEYS[2]), items, redis.call('GET', KEYS[6]),
          attempt(front, token, ttl), redis.call('HGETALL', KEYS[9]), redis.call('GET', KEYS[10])}
end
"""
# KEYS: lock q qmsg done stop question warnings tries ledger busy. ARGV: token ttl_ms entry
# payload cap queue_ttl default_mode mode_ttl. Returns {state, depth, queue, question, attempt,
# ledger, stored mode}.
_SUBMIT = (
    _TAKE
    + """
if redis.call('ZSCORE', KEYS[4], ARGV[3]) then return {'done', 0, {}, false} end
local stored = redis.call('GET', KEYS[10])
if stored then redis.call('EXPIRE', KEYS[10], ARGV[8]) end
local current = redis.call('GET', KEYS[1])
if (stored or ARGV[7]) == 'reject' and current and current ~= ARGV[1]
    and not redis.call('ZSCORE', KEYS[2], ARGV[3]) then
  return {'busy', redis.call('ZCARD', KEYS[2]), {}, false, 0, {}, stored}
end
if not redis.call('ZSCORE', KEYS[2], ARGV[3]) then
  local depth = redis.call('ZCARD', KEYS[2])
  if depth >= tonumber(ARGV[5]) then return {'full', depth, {}, false} end
  redis.call('ZADD', KEYS[2], 0, ARGV[3])
  redis.call('HSET', KEYS[3], ARGV[3], ARGV[4])
end
redis.call('EXPIRE', KEYS[2], ARGV[6])
redis.call('EXPIRE', KEYS[3], ARGV[6])
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then
  return {'queued', redis.call('ZCARD', KEYS[2]), {}, false, 0, {}, stored}
end
if not holder then take_lock(ARGV[1], ARGV[2]) end
return taken(ARGV[1], ARGV[6])
"""
)
# KEYS as submit. ARGV: token ttl_ms queue_ttl. The lock for a queue whose holder
# went away.
_RESUME = (
    _TAKE
    + """
if redis.call('ZCARD', KEYS[2]) == 0 then return {'empty', 0, {}, false} end
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return {'busy', redis.call('ZCARD', KEYS[2]), {}, false} end
if not holder then take_lock(ARGV[1], ARGV[2]) end
return taken(ARGV[1], ARGV[3])
"""
)
# KEYS as submit. ARGV: token ttl_ms now answered_question_id done_ttl answered ids...
# Marks the batch answered (its attempts and ledger go with it) and returns what queued
# meanwhile, or releases the lock.
_FINISH = (
    _TAKE
    + """
local holder = redis.call('GET', KEYS[1])
local answered = {}
for i = 6, #ARGV do answered[#answered + 1] = ARGV[i] end
local now = tonumber(ARGV[3])
if holder ~= ARGV[1] then
  -- The lock expired under us (a long Redis outage). Our reply was sent, so the batch is
  -- answered: record it, or the next holder would answer it again. The lock is not touched.
  local fresh = 0
  for _, id in ipairs(answered) do
    if not redis.call('ZSCORE', KEYS[4], id) then
      fresh = fresh + 1
      redis.call('ZREM', KEYS[2], id)
      redis.call('HDEL', KEYS[3], id)
      redis.call('HDEL', KEYS[8], id)
      redis.call('ZADD', KEYS[4], now, id)
    end
  end
  if fresh > 0 then
    redis.call('EXPIRE', KEYS[4], ARGV[5])
    return {'lost', 0, {}, false}
  end
  return {'released', 0, {}, false}
end
for _, id in ipairs(answered) do
  redis.call('ZREM', KEYS[2], id)
  redis.call('HDEL', KEYS[3], id)
  redis.call('HDEL', KEYS[8], id)
  redis.call('ZADD', KEYS[4], now, id)
end
redis.call('DEL', KEYS[9])
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - tonumber(ARGV[5]))
redis.call('EXPIRE', KEYS[4], ARGV[5])
if ARGV[4] ~= '' then
  local raw = redis.call('GET', KEYS[6])
  if raw then
    local ok, doc = pcall(cjson.decode, raw)
    if not ok or type(doc) ~= 'table' or doc['question_id'] == ARGV[4] then
      redis.call('DEL', KEYS[6])
    end
  end
end
if redis.call('ZCARD', KEYS[2]) == 0 then
  redis.call('DEL', KEYS[1])
  return {'released', 0, {}, false}
end
-- a stop or interrupt not taken yet was meant for the batch just answered, not the next one
redis.call('DEL', KEYS[5])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return taken(ARGV[1], ARGV[5])
"""
)
# KEYS: lock ledger. ARGV: token record ttl. The holder's answer for its batch, before any send.
_RECORD = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'rec', ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[3])
return 1
"""
# KEYS: lock q qmsg. ARGV: token after limit. What queued behind the holder's batch (entries after
# `after`, oldest first, as id/payload pairs); false when the lock is not the caller's.
_RUNNING = """
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local first = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
if not first then return false end
return redis.call('HGET', KEYS[3], first)
"""

_ABSORB = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return false end
local out = {}
for _, id in ipairs(redis.call('ZRANGEBYLEX', KEYS[2], '(' .. ARGV[2], '+', 'LIMIT', 0, ARGV[3])) do
  out[#out + 1] = id
  out[#out + 1] = redis.call('HGET', KEYS[3], id) or ''
end
return out
"""
# KEYS: ledger. ARGV: field value pairs. A sent piece is a fact whoever holds the lock now, but a
# ledger already finished (deleted) is not brought back.
_RECEIPT = """
if redis.call('HEXISTS', KEYS[1], 'rec') == 0 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1
"""


class ThreadQueue:
    def __init__(
        self,
        client: redis.Redis,
        *,
        keys: Keys,
        lock_ttl_s: float = LOCK_TTL_S,
        cap: int = QUEUE_CAP,
        checkpoints: RedisCheckpointSaver | None = None,
    ) -> None:
        """With `checkpoints`, a submit reads the thread's latest checkpoint in its own round
        trip (same hash slot) and, when it takes the lock, offers it to the saver for the run."""
        self._r = client
        self._keys = keys
        self.lock_ttl_s = lock_ttl_s
        self.cap = cap
        self._checkpoints = checkpoints
        self._submit = client.register_script(_SUBMIT)
        self._resume = client.register_script(_RESUME)
        self._finish = client.register_script(_FINISH)
        self._record = client.register_script(_RECORD)
        self._receipt = client.register_script(_RECEIPT)
        self._absorb = client.register_script(_ABSORB)
        self._running = client.register_script(_RUNNING)

    def _thread_keys(self, thread_id: str) -> list[str]:
        k = self._keys
        return [
            k.lock(thread_id),
            k.thread(thread_id, "q"),
            k.thread(thread_id, "qmsg"),
            k.thread(thread_id, "done"),
            k.stop(thread_id),
            k.question(thread_id),
            k.pending_warnings(thread_id),
            k.thread(thread_id, "tries"),
            k.thread(thread_id, "ledger"),
            k.thread(thread_id, "busy"),
        ]

    async def submit(
        self,
        thread_id: str,
        entry_id: str,
        payload: bytes,
        token: str,
        *,
        busy: BusyMode = BusyMode.QUEUE,
    ) -> Slot:
        """Queue the message and take the lock if it is free (then answer the queue). `busy` is
        the default mode, for a conversation that set none: in `reject` mode a busy thread
        refuses the message (BUSY) instead."""
        args: list[EncodableT] = [
            token,
            lock_ms(self.lock_ttl_s),
            sortable_entry_id(entry_id),
            payload,
            self.cap,
            QUEUE_TTL_S,
            str(busy),
            MODE_TTL_S,
        ]
        if self._checkpoints is None:
            return self._slot(
                thread_id, token, await self._call("submit", self._submit, thread_id, args)
            )
        calls = [
            ScriptCall(self._submit, self._thread_keys(thread_id), args),
            self._checkpoints.latest_call(thread_id),
        ]
        with redis_errors("thread submit"):
            raw, latest = await run_scripts(self._r, calls)
        slot = self._slot(thread_id, token, cast("list[Any]", raw))
        if slot.state is SlotState.RUN:
            self._checkpoints.offer(thread_id, token, latest)
        return slot

    async def resume(self, thread_id: str, token: str) -> Slot:
        """Take the lock of a queue left without a holder (crash, or a failed finish)."""
        raw = await self._call(
            "resume",
            self._resume,
            thread_id,
            [token, lock_ms(self.lock_ttl_s), QUEUE_TTL_S],
        )
        return self._slot(thread_id, token, raw)

    async def finish(self, lock: Lock, answered: list[str], question_id: str = "") -> Slot:
        """Record `answered` (entry ids) as answered and drop the question they answered; returns
        the next batch (lock kept) or RELEASED. LOST when the lock had expired first: the batch
        is recorded all the same (its reply was sent), the lock and the rest are left alone."""
        raw = await self._call(
            "finish",
            self._finish,
            lock.thread_id,
            [
                lock.token,
                lock_ms(lock.ttl_s),
                int(time.time()),
                question_id,
                DONE_TTL_S,
                *answered,
            ],
        )
        return self._slot(lock.thread_id, lock.token, raw)

    async def record(self, lock: Lock, record: bytes) -> bool:
        """Record the batch's answer before its first send; False if the lock is no longer
        ours (the answer must not be sent then)."""
        with redis_errors("ledger record"):
            return bool(
                await self._record(
                    keys=[self._keys.lock(lock.thread_id), self._ledger_key(lock.thread_id)],
                    args=[lock.token, record, QUEUE_TTL_S],
                )
            )

    async def receipt(self, thread_id: str, sent: dict[int, str]) -> None:
        """Record that pieces were accepted by the platform (piece index → message ids)."""
        if not sent:
            return
        args: list[str] = []
        for index, ids in sent.items():
            args += [f"r:{index}", ids]
        with redis_errors("ledger receipt"):
            await self._receipt(keys=[self._ledger_key(thread_id)], args=args)

    async def absorb(
        self, lock: Lock, after: str, limit: int = QUEUE_CAP
    ) -> list[QueuedItem] | None:
        """What queued behind `after` (a sortable entry id), for the holder to take into its
        running turn; None when the lock is not the caller's any more."""
        k = self._keys
        with redis_errors("thread absorb"):
            flat = await self._absorb(
                keys=[
                    k.lock(lock.thread_id),
                    k.thread(lock.thread_id, "q"),
                    k.thread(lock.thread_id, "qmsg"),
                ],
                args=[lock.token, after, limit],
            )
        if flat is None:
            return None
        return [QueuedItem(as_text(flat[i]), bytes(flat[i + 1])) for i in range(0, len(flat), 2)]

    async def set_mode(self, thread_id: str, mode: BusyMode | None) -> None:
        """The conversation's own busy mode (`/queue MODE`); None goes back to the default."""
        key = self._keys.thread(thread_id, "busy")
        with redis_errors("busy mode"):
            if mode is None:
                await self._r.delete(key)
            else:
                await self._r.set(key, str(mode), ex=MODE_TTL_S)

    def _ledger_key(self, thread_id: str) -> str:
        return self._keys.thread(thread_id, "ledger")

    async def state(self, thread_id: str) -> ThreadState:
        """For `/status`: one pipelined round trip, no script."""
        k = self._keys
        pipe = self._r.pipeline(transaction=False)
        pipe.exists(k.lock(thread_id))
        pipe.zcard(k.thread(thread_id, "q"))
        pipe.get(k.question(thread_id))
        pipe.get(k.thread(thread_id, "busy"))
        with redis_errors("thread state"):
            busy, unanswered, question, mode = await pipe.execute()
        return ThreadState(bool(busy), int(unanswered), parse_question(question), _mode(mode))

    async def running(self, thread_id: str) -> bytes | None:
        """The message whose batch a holder is answering (the queue's front while the lock is
        held), or None when nothing runs: whose run `/stop`, `/new` and `/queue` act on, read
        from the queue itself rather than from anything a client sends. One round trip."""
        k = self._keys
        keys = [k.lock(thread_id), k.thread(thread_id, "q"), k.thread(thread_id, "qmsg")]
        with redis_errors("thread running"):
            raw = await self._running(keys=keys)
        return None if raw is None else bytes(raw)

    async def _call(
        self, what: str, script: AsyncScript, thread_id: str, args: list[EncodableT]
    ) -> list[Any]:
        with redis_errors(f"thread {what}"):
            reply = await script(keys=self._thread_keys(thread_id), args=args)
        # redis-py leaves a script call's reply unannotated; these scripts all reply with an
        # array of mixed bulk strings, integers and nested arrays
        return cast("list[Any]", reply)

    def _slot(self, thread_id: str, token: str, raw: list[Any]) -> Slot:
        state_raw, depth, flat, question_raw = raw[:4]
        state = SlotState(state_raw.decode() if isinstance(state_raw, bytes) else state_raw)
        items = [QueuedItem(as_text(flat[i]), bytes(flat[i + 1])) for i in range(0, len(flat), 2)]
        lock = Lock(thread_id, token, self.lock_ttl_s) if state is SlotState.RUN else None
        attempt = int(raw[4]) if len(raw) > 4 else 0
        ledger = _ledger(raw[5]) if len(raw) > 5 else None
        mode = _mode(raw[6]) if len(raw) > 6 else None
        question = parse_question(question_raw or None)
        return Slot(state, int(depth), lock, items, question, attempt, ledger, mode)


def _ledger(flat: list[Any]) -> Ledger | None:
    fields = {as_text(flat[i]): flat[i + 1] for i in range(0, len(flat), 2)}
    record = fields.pop("rec", None)
    if record is None:
        return None
    receipts: dict[int, str] = {}
    for name, value in fields.items():
        if name.startswith("r:") and name[2:].isdigit():
            receipts[int(name[2:])] = as_text(value)
    return Ledger(bytes(record), receipts)


def _mode(raw: bytes | str | None) -> BusyMode | None:
    """A stored mode; an unknown value (written by a newer release) counts as none."""
    if not raw:
        return None
    try:
        return BusyMode(as_text(raw))
    except ValueError:
        return None
