"""The checkpoint saver's Lua scripts (`checkpoint.py` has the key table they work on).

Every script takes a thread's six keys in `_SUFFIXES` order (idx, chk, blob, wr, widx, ridx) and
runs in one slot; `_PRELUDE` holds the helpers they share (TTL refresh, NUL-split, pruning).
"""

from __future__ import annotations

__all__ = ["DELETE", "LOAD", "PUT", "WRITES"]

_PRELUDE = r"""
local function touch(ttl)
  for i = 1, 6 do
    if ttl > 0 then redis.call('EXPIRE', KEYS[i], ttl) else redis.call('PERSIST', KEYS[i]) end
  end
end
local function split0(s)
  local out = {}
  if not s or s == '' then return out end
  local start = 1
  while true do
    local i = string.find(s, '\0', start, true)
    if not i then out[#out + 1] = string.sub(s, start); return out end
    out[#out + 1] = string.sub(s, start, i - 1)
    start = i + 1
  end
end
local function ns_of(m)
  return string.sub(m, 1, string.find(m, '\0', 1, true))
end
local function blob_fields(m, refs)
  local ns, parts, fields = ns_of(m), split0(refs), {}
  for i = 1, #parts, 2 do fields[#fields + 1] = ns .. parts[i] .. '\0' .. parts[i + 1] end
  return fields
end
local function chunked(cmd, key, items)
  local out = {}
  for i = 1, #items, 1000 do
    local part = redis.call(cmd, key, unpack(items, i, math.min(i + 999, #items)))
    if type(part) == 'table' then
      for _, v in ipairs(part) do out[#out + 1] = v end
    end
  end
  return out
end
local function writes_of(m)
  return redis.call('ZRANGEBYLEX', KEYS[5], '[' .. m .. '\0', '(' .. m .. '\1')
end
local function gc_blobs()
  local keep = {}
  for _, m in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
    for _, f in ipairs(blob_fields(m, redis.call('HGET', KEYS[2], m .. '\0r'))) do
      keep[f] = true
    end
  end
  local drop = {}
  for _, f in ipairs(redis.call('HKEYS', KEYS[3])) do
    if not keep[f] then drop[#drop + 1] = f end
  end
  if #drop > 0 then chunked('HDEL', KEYS[3], drop) end
end
local function drop_members(members)
  for _, m in ipairs(members) do
    local u = redis.call('HGET', KEYS[2], m .. '\0u')
    redis.call('HDEL', KEYS[2], m, m .. '\0m', m .. '\0p', m .. '\0r', m .. '\0u')
    redis.call('ZREM', KEYS[1], m)
    if u and u ~= '' then redis.call('ZREM', KEYS[6], u .. '\0' .. m) end
    local wf = writes_of(m)
    if #wf > 0 then
      chunked('HDEL', KEYS[4], wf)
      chunked('ZREM', KEYS[5], wf)
    end
  end
  gc_blobs()
end
"""

# KEYS: the six thread keys, then the thread lock. ARGV: ttl, m, checkpoint, metadata, parent,
# refs, run, fence, keep, then (blob field, blob value) pairs. A non-empty fence is the writer's lock
# token: a writer that lost the thread lock writes nothing (returns 0). Redis does not roll back a
# script that fails midway, so the order matters: blobs first, then the record, and the index
# (what makes it "latest") last. A `keep` of 0 or more then prunes the namespace to its newest
# keep + 1 checkpoints, and drops pending writes left without their checkpoint (a write that
# arrived after its checkpoint was pruned). Each write prunes at most 256 checkpoints and checks
# at most 1024 writes, so a thread from before pruning shrinks over a few turns without one long
# script blocking the server.
PUT = (
    _PRELUDE
    + r"""
local m, run, keep = ARGV[2], ARGV[7], tonumber(ARGV[9])
if ARGV[8] ~= '' and redis.call('GET', KEYS[7]) ~= ARGV[8] then return 0 end
for i = 10, #ARGV, 2 do redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1]) end
local old = redis.call('HGET', KEYS[2], m .. '\0u')
if old and old ~= '' and old ~= run then redis.call('ZREM', KEYS[6], old .. '\0' .. m) end
redis.call('HSET', KEYS[2], m, ARGV[3], m .. '\0m', ARGV[4], m .. '\0p', ARGV[5],
  m .. '\0r', ARGV[6], m .. '\0u', run)
if run ~= '' then redis.call('ZADD', KEYS[6], 0, run .. '\0' .. m) end
redis.call('ZADD', KEYS[1], 0, m)
if keep >= 0 then
  local ns = ns_of(m)
  local upper = '(' .. string.sub(ns, 1, -2) .. '\1'
  local stale = redis.call('ZREVRANGEBYLEX', KEYS[1], upper, '(' .. ns, 'LIMIT', keep + 1, 256)
  if #stale > 0 then drop_members(stale) end
  local orphans = {}
  for _, f in ipairs(redis.call('ZRANGE', KEYS[5], 0, 1023)) do
    local cut = string.find(f, '\0', string.find(f, '\0', 1, true) + 1, true)
    if cut and redis.call('HEXISTS', KEYS[2], string.sub(f, 1, cut - 1)) == 0 then
      orphans[#orphans + 1] = f
    end
  end
  if #orphans > 0 then
    chunked('HDEL', KEYS[4], orphans)
    chunked('ZREM', KEYS[5], orphans)
  end
end
touch(tonumber(ARGV[1]))
return 1
"""
)

# ARGV: ttl, field base `m\0<task_id>\0`, then (idx, record) pairs. Regular writes keep the
# first value stored for (task, idx); special writes (negative idx) overwrite, as InMemorySaver.
WRITES = (
    _PRELUDE
    + r"""
local base = ARGV[2]
for i = 3, #ARGV, 2 do
  local f = base .. ARGV[i]
  if tonumber(ARGV[i]) < 0 then
    redis.call('HSET', KEYS[4], f, ARGV[i + 1])
  else
    redis.call('HSETNX', KEYS[4], f, ARGV[i + 1])
  end
  redis.call('ZADD', KEYS[5], 0, f)
end
touch(tonumber(ARGV[1]))
return 1
"""
)

# ARGV: 'latest', ns  |  'ids', m1, m2, … . Returns one entry per checkpoint (false if missing):
# {m, checkpoint, metadata, parent, refs, {blob values in refs order}, {write records}}.
LOAD = (
    _PRELUDE
    + r"""
local function load(m)
  local rec = redis.call('HMGET', KEYS[2], m, m .. '\0m', m .. '\0p', m .. '\0r')
  if not rec[1] then return false end
  local blobs = chunked('HMGET', KEYS[3], blob_fields(m, rec[4]))
  local writes = chunked('HMGET', KEYS[4], writes_of(m))
  return {m, rec[1], rec[2], rec[3], rec[4], blobs, writes}
end
if ARGV[1] == 'latest' then
  local ns = ARGV[2]
  local top = redis.call('ZREVRANGEBYLEX', KEYS[1], '(' .. ns .. '\1', '(' .. ns .. '\0',
    'LIMIT', 0, 1)
  if #top == 0 then return {} end
  return {load(top[1])}
end
local out = {}
for i = 2, #ARGV do out[#out + 1] = load(ARGV[i]) end
return out
"""
)

# ARGV: 'runs', run1, … | 'members', m1, … . Deletes those checkpoints and their writes, then
# every blob no remaining checkpoint references. Returns how many checkpoints it deleted.
DELETE = (
    _PRELUDE
    + r"""
local members = {}
if ARGV[1] == 'runs' then
  for i = 2, #ARGV do
    local r = ARGV[i]
    for _, e in ipairs(redis.call('ZRANGEBYLEX', KEYS[6], '[' .. r .. '\0', '(' .. r .. '\1')) do
      members[#members + 1] = string.sub(e, #r + 2)
    end
  end
else
  for i = 2, #ARGV do members[#members + 1] = ARGV[i] end
end
if #members == 0 then return 0 end
drop_members(members)
return #members
"""
)
