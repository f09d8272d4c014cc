"""A live class's room, kept where every server process of the class reaches it.

    rooms = open_rooms("sqlite:///run/rooms.sqlite")     # or "redis://host:6379/0"
    code, secret = rooms.open(size=60)                  # the teacher's session keeps `secret`, never a link
    rooms.goto(code, secret, {"slug": "state", "number": 2, "choices": 3, "guess": None})
    token = rooms.join(code)                            # a phone; join(code, token) again after a reload
    rooms.answer(code, token, turn, 1)                  # changeable until the reveal
    rooms.show(code, secret); rooms.reveal(code, secret, correct=1, explain={"en": "…", "it": "…"})

A room moves through its cards in *turns* (one per card shown); in each turn it is `asking` (answers come in),
`showing` (the projector shows the distribution; answers may still change), then `revealed` (no more changes);
`ended` closes the class and keeps its results for the summary and the CSV. Everything a phone sends carries the
turn it answers, so a tap that crosses the teacher's next card is refused instead of counted on the wrong card.

What it keeps is nothing personal: random codes, a hash of the teacher's secret, random student tokens (no name,
no address), one choice (and one sketch) per token for the current card, and counts per card. A room that nobody
wrote to for `idle_hours` is gone. The rules are the same in both stores: a write is checked against the room as
it is at that moment (an SQLite transaction, a Redis script or a watched transaction), never against a copy.
"""
import hashlib
import hmac
import json
import math
import os
import random
import secrets
import sqlite3
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"   # no 0/O, 1/I/L: read off a projector at the back of a room
CODE_LENGTH = 6                                     # 31⁶ ≈ 8.9 · 10⁸ codes, rate limits on top (phone.py)
IDLE_HOURS = 4.0
ROOM_SIZE = 60
MAX_ROOMS = 500                    # rooms alive at once in one store: past it, no new one until one goes
MAX_CHOICES = 8
MAX_POINTS = 64                    # a sketch's points (app/components/lesson.py sends at most 40)
PHASES = ("asking", "showing", "revealed", "ended")
ANSWERING = ("asking", "showing")


class Refused(Exception):
    """What a room refused, as a short reason: unknown (no such room), full, stranger (not a member), late (the
    card moved on or was revealed), choice (not one of the card's), sketch, teacher (a wrong secret), rooms (too
    many rooms alive)."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


def new_code():
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def clean_code(text):
    """A code as a student may type it (lower case, spaces, dashes) → the room's code, or None."""
    if not isinstance(text, str) or len(text) > 20:
        return None
    code = "".join(text.split()).replace("-", "").upper()
    return code if len(code) == CODE_LENGTH and all(c in CODE_ALPHABET for c in code) else None


def digest(secret):
    return hashlib.sha256(secret.encode()).hexdigest()


def check_points(points):
    """A sketch as the browser sends it: 2 to MAX_POINTS points [x, y], fractions of the axes in [0, 1]."""
    if not isinstance(points, (list, tuple)) or not 2 <= len(points) <= MAX_POINTS:
        raise Refused("sketch")
    for point in points:
        if not (isinstance(point, (list, tuple)) and len(point) == 2 and all(
                isinstance(c, (int, float)) and not isinstance(c, bool) and math.isfinite(c) and 0 <= c <= 1
                for c in point)):
            raise Refused("sketch")
    return [[float(x), float(y)] for x, y in points]


def check_card(card):
    """The current card as the teacher's session describes it: slug, number, how many choices, its guess's axes."""
    if not (isinstance(card, dict) and isinstance(card.get("slug"), str) and isinstance(card.get("number"), int)
            and isinstance(card.get("choices"), int) and 1 <= card["choices"] <= MAX_CHOICES):
        raise ValueError(f"not a card: {card!r}")
    return {"slug": card["slug"], "number": card["number"], "choices": card["choices"], "guess": card.get("guess")}


def same_card(a, b):
    return a is not None and b is not None and (a["slug"], a["number"]) == (b["slug"], b["number"])


def tally(choices, count):
    """Counts per choice (a list of `count`) of the chosen indices."""
    counts = [0] * count
    for choice in choices:
        if 0 <= choice < count:
            counts[choice] += 1
    return counts


def archived(results, card, counts, correct):
    """The results with this card's turn in them (a card shown again replaces its earlier entry)."""
    if card is None or not sum(counts):
        return results
    entry = {"slug": card["slug"], "number": card["number"], "counts": counts, "correct": correct,
             "answered": sum(counts)}
    return [r for r in results if (r["slug"], r["number"]) != (card["slug"], card["number"])] + [entry]


class Rooms:
    """The operations every store offers (see the module's docstring); each raises Refused when not allowed."""

    def __init__(self, idle_hours=IDLE_HOURS, max_rooms=MAX_ROOMS):
        self.idle_s = idle_hours * 3600
        self.max_rooms = max_rooms

    def open(self, size=ROOM_SIZE):
        """A new room (code, secret): the secret is the teacher's and only its hash is kept."""
        secret = secrets.token_urlsafe(24)
        for _attempt in range(20):
            code = new_code()
            if self._create(code, digest(secret), int(size)):
                return code, secret
        raise Refused("rooms")

    def check(self):
        """Raise OSError (or the client's error) now when the store cannot be reached, not at the first class."""

    # each store implements: _create, is_teacher, goto, show, reveal, end, close, join, answer, sketch, state,
    # versions, chosen, sketches, expire


# ---------------------------------------------------------------- SQLite: one machine, any number of processes

SCHEMA = """
CREATE TABLE IF NOT EXISTS rooms (code TEXT PRIMARY KEY, secret TEXT NOT NULL, size INTEGER NOT NULL,
    phase TEXT NOT NULL, turn INTEGER NOT NULL, card TEXT, correct INTEGER, explain TEXT, results TEXT NOT NULL,
    version INTEGER NOT NULL, touched REAL NOT NULL);
CREATE TABLE IF NOT EXISTS members (code TEXT NOT NULL, token TEXT NOT NULL, PRIMARY KEY (code, token));
CREATE TABLE IF NOT EXISTS answers (code TEXT NOT NULL, turn INTEGER NOT NULL, token TEXT NOT NULL,
    choice INTEGER, sketch TEXT, PRIMARY KEY (code, turn, token));
"""


def _prepare(connection, patience_s=10.0):
    """WAL mode and the tables. Switching to WAL skips SQLite's busy timeout, so the processes of one start that
    reach a fresh file together (two of them once stopped a hosted start with "database is locked") wait here."""
    deadline = time.monotonic() + patience_s
    while True:
        try:
            if connection.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                connection.execute("PRAGMA journal_mode=WAL")
            connection.executescript(SCHEMA)
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.05 + random.random() * 0.1)


class SqliteRooms(Rooms):
    """Rooms in one SQLite file in WAL mode: the processes of one machine read it while one writes. Each process
    opens its own connection (a connection must not cross a fork); writes take the file's write lock for their
    check and their change together (BEGIN IMMEDIATE)."""

    def __init__(self, path, **options):
        super().__init__(**options)
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()                 # pages are built on a thread of their own
        self._connection, self._pid = None, None

    def check(self):
        connection = sqlite3.connect(self.path, timeout=5, isolation_level=None)   # let go: never carried over a fork
        try:
            _prepare(connection)
        finally:
            connection.close()
        os.chmod(self.path, 0o600)

    def _db(self):
        if self._pid != os.getpid():
            fresh = not self.path.exists()
            connection = sqlite3.connect(self.path, timeout=5, isolation_level=None, check_same_thread=False)
            if fresh:
                os.chmod(self.path, 0o600)
            _prepare(connection)
            connection.execute("PRAGMA synchronous=NORMAL")      # WAL: a power cut may lose the last answers only
            self._connection, self._pid = connection, os.getpid()
        return self._connection

    def _write(self, change):
        """Run change(db) in one write transaction (the check and the change see the same room)."""
        with self._lock:
            db = self._db()
            db.execute("BEGIN IMMEDIATE")
            try:
                result = change(db)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            return result

    def _read(self, query, *args):
        with self._lock:
            return self._db().execute(query, args).fetchall()

    def _room(self, db, code):
        row = db.execute("SELECT secret, size, phase, turn, card, correct, explain, results FROM rooms "
                         "WHERE code = ? AND touched > ?", (code, time.time() - self.idle_s)).fetchone()
        if row is None:
            raise Refused("unknown")
        secret, size, phase, turn, card, correct, explain, results = row
        return {"secret": secret, "size": size, "phase": phase, "turn": turn, "card": json.loads(card or "null"),
                "correct": correct, "explain": json.loads(explain or "null"), "results": json.loads(results)}

    @staticmethod
    def _changed(db, code, **fields):
        sets = "".join(f", {name} = ?" for name in fields)
        db.execute(f"UPDATE rooms SET version = version + 1, touched = ?{sets} WHERE code = ?",
                   (time.time(), *fields.values(), code))

    def _create(self, code, secret_hash, size):
        def create(db):
            self._expire(db)
            if db.execute("SELECT count(*) FROM rooms").fetchone()[0] >= self.max_rooms:
                raise Refused("rooms")
            if db.execute("SELECT 1 FROM rooms WHERE code = ?", (code,)).fetchone():
                return False
            db.execute("INSERT INTO rooms VALUES (?, ?, ?, 'asking', 0, NULL, NULL, NULL, '[]', 1, ?)",
                       (code, secret_hash, size, time.time()))
            return True
        return self._write(create)

    def _teacher(self, db, code, secret):
        room = self._room(db, code)
        if not (isinstance(secret, str) and hmac.compare_digest(room["secret"], digest(secret))):
            raise Refused("teacher")
        return room

    def _counts(self, db, code, room):
        card = room["card"]
        if card is None:
            return []
        rows = db.execute("SELECT choice FROM answers WHERE code = ? AND turn = ? AND choice IS NOT NULL",
                          (code, room["turn"])).fetchall()
        return tally([r[0] for r in rows], card["choices"])

    def is_teacher(self, code, secret):
        try:
            with self._lock:
                self._teacher(self._db(), code, secret)
        except Refused:
            return False
        return True

    def goto(self, code, secret, card):
        card = check_card(card)

        def goto(db):
            room = self._teacher(db, code, secret)
            if same_card(room["card"], card) and room["phase"] != "ended":
                if room["card"] != card:                  # the card's page, built, adds its sketch's axes
                    self._changed(db, code, card=json.dumps(card))
                return room["turn"]                       # already there (the teacher's page came again)
            results = archived(room["results"], room["card"], self._counts(db, code, room), room["correct"])
            db.execute("DELETE FROM answers WHERE code = ?", (code,))
            self._changed(db, code, phase="asking", turn=room["turn"] + 1, card=json.dumps(card), correct=None,
                          explain=None, results=json.dumps(results))
            return room["turn"] + 1
        return self._write(goto)

    def show(self, code, secret):
        def show(db):
            room = self._teacher(db, code, secret)
            if room["phase"] == "asking" and room["card"] is not None:
                self._changed(db, code, phase="showing")
        self._write(show)

    def reveal(self, code, secret, correct, explain):
        def reveal(db):
            room = self._teacher(db, code, secret)
            if room["phase"] in ANSWERING and room["card"] is not None:
                if not 0 <= int(correct) < room["card"]["choices"]:
                    raise ValueError(f"choice {correct} of {room['card']['choices']}")
                self._changed(db, code, phase="revealed", correct=int(correct), explain=json.dumps(explain))
        self._write(reveal)

    def end(self, code, secret):
        def end(db):
            room = self._teacher(db, code, secret)
            if room["phase"] != "ended":
                results = archived(room["results"], room["card"], self._counts(db, code, room), room["correct"])
                db.execute("DELETE FROM answers WHERE code = ?", (code,))
                self._changed(db, code, phase="ended", results=json.dumps(results))
        self._write(end)

    def close(self, code, secret):
        def close(db):
            self._teacher(db, code, secret)
            for table in ("answers", "members", "rooms"):
                db.execute(f"DELETE FROM {table} WHERE code = ?", (code,))
        self._write(close)

    def join(self, code, token=None):
        def join(db):
            room = self._room(db, code)
            if isinstance(token, str) and db.execute("SELECT 1 FROM members WHERE code = ? AND token = ?",
                                                     (code, token)).fetchone():
                return token                              # the same phone again (a reload)
            if db.execute("SELECT count(*) FROM members WHERE code = ?", (code,)).fetchone()[0] >= room["size"]:
                raise Refused("full")
            fresh = secrets.token_urlsafe(12)
            db.execute("INSERT INTO members VALUES (?, ?)", (code, fresh))
            self._changed(db, code)
            return fresh
        return self._write(join)

    def _member_answering(self, db, code, token, turn):
        room = self._room(db, code)
        if not db.execute("SELECT 1 FROM members WHERE code = ? AND token = ?", (code, token)).fetchone():
            raise Refused("stranger")
        if turn != room["turn"] or room["phase"] not in ANSWERING or room["card"] is None:
            raise Refused("late")
        return room

    def answer(self, code, token, turn, choice):
        def answer(db):
            room = self._member_answering(db, code, token, turn)
            if not (isinstance(choice, int) and not isinstance(choice, bool) and 0 <= choice < room["card"]["choices"]):
                raise Refused("choice")
            db.execute("INSERT INTO answers (code, turn, token, choice) VALUES (?, ?, ?, ?) ON CONFLICT "
                       "(code, turn, token) DO UPDATE SET choice = excluded.choice", (code, turn, token, choice))
            self._changed(db, code)
        self._write(answer)

    def sketch(self, code, token, turn, points):
        points = check_points(points)

        def sketch(db):
            room = self._member_answering(db, code, token, turn)
            if not room["card"].get("guess"):
                raise Refused("sketch")
            db.execute("INSERT INTO answers (code, turn, token, sketch) VALUES (?, ?, ?, ?) ON CONFLICT "
                       "(code, turn, token) DO UPDATE SET sketch = excluded.sketch",
                       (code, turn, token, json.dumps(points)))
            self._changed(db, code)
        self._write(sketch)

    def state(self, code):
        """What the projector and the phones show (no token, no secret), or None when the room is gone."""
        with self._lock:
            db = self._db()
            try:
                room = self._room(db, code)
            except Refused:
                return None
            counts = self._counts(db, code, room)
            joined = db.execute("SELECT count(*) FROM members WHERE code = ?", (code,)).fetchone()[0]
            sketched = db.execute("SELECT count(*) FROM answers WHERE code = ? AND turn = ? AND sketch IS NOT NULL",
                                  (code, room["turn"])).fetchone()[0]
            version = db.execute("SELECT version FROM rooms WHERE code = ?", (code,)).fetchone()[0]
        return public(code, room, counts, joined, sketched, version)

    def versions(self, codes):
        """{code: version} of the rooms among `codes` that are alive (one query: what each process polls)."""
        codes = list(codes)
        if not codes:
            return {}
        marks = ",".join("?" * len(codes))
        rows = self._read(f"SELECT code, version FROM rooms WHERE code IN ({marks}) AND touched > ?",
                          *codes, time.time() - self.idle_s)
        return dict(rows)

    def chosen(self, code, token, turn):
        rows = self._read("SELECT choice FROM answers WHERE code = ? AND turn = ? AND token = ?", code, turn, token)
        return rows[0][0] if rows and rows[0][0] is not None else -1

    def sketches(self, code, turn):
        rows = self._read("SELECT sketch FROM answers WHERE code = ? AND turn = ? AND sketch IS NOT NULL", code, turn)
        return [json.loads(r[0]) for r in rows]

    def _expire(self, db):
        old = [r[0] for r in db.execute("SELECT code FROM rooms WHERE touched <= ?", (time.time() - self.idle_s,))]
        for code in old:
            for table in ("answers", "members", "rooms"):
                db.execute(f"DELETE FROM {table} WHERE code = ?", (code,))
        return len(old)

    def expire(self):
        """Delete the rooms idle past `idle_hours` (they are already invisible); the count deleted."""
        return self._write(self._expire)


def public(code, room, counts, joined, sketched, version):
    return {"code": code, "version": version, "phase": room["phase"], "turn": room["turn"], "card": room["card"],
            "size": room["size"], "joined": joined, "counts": counts, "answered": sum(counts), "sketched": sketched,
            "correct": room["correct"] if room["phase"] in ("revealed", "ended") else None,
            "explain": room["explain"] if room["phase"] in ("revealed", "ended") else None,
            "results": room["results"]}


# ---------------------------------------------------------------- Redis: servers on several machines

# A student's write, checked and made in one step (Redis runs a script alone): KEYS room, members, version,
# answers-or-sketches of the turn; ARGV token, turn, value, ttl, kind ("choice" | "sketch").
_STUDENT = """
local room = redis.call('HMGET', KEYS[1], 'phase', 'turn', 'choices', 'guess')
if not room[1] then return 'unknown' end
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 0 then return 'stranger' end
if room[2] ~= ARGV[2] or (room[1] ~= 'asking' and room[1] ~= 'showing') or room[3] == false then return 'late' end
if ARGV[5] == 'choice' then
  local choice = tonumber(ARGV[3])
  if choice == nil or choice < 0 or choice >= tonumber(room[3]) or choice % 1 ~= 0 then return 'choice' end
elseif room[4] ~= '1' then return 'sketch' end
redis.call('HSET', KEYS[4], ARGV[1], ARGV[3])
redis.call('INCR', KEYS[3])
for i = 1, 4 do redis.call('EXPIRE', KEYS[i], ARGV[4]) end
return 'ok'
"""
# a phone joining: KEYS room, members, version; ARGV token (or ''), new token, ttl
_JOIN = """
local size = redis.call('HGET', KEYS[1], 'size')
if not size then return {'unknown'} end
if ARGV[1] ~= '' and redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then return {'ok', ARGV[1]} end
if redis.call('SCARD', KEYS[2]) >= tonumber(size) then return {'full'} end
redis.call('SADD', KEYS[2], ARGV[2])
redis.call('INCR', KEYS[3])
for i = 1, 3 do redis.call('EXPIRE', KEYS[i], ARGV[3]) end
return {'ok', ARGV[2]}
"""


class RedisRooms(Rooms):
    """Rooms in Redis, for servers on several machines. A student's write is one script (checked and made at once);
    the teacher's are watched transactions on the room (retried if the room changed meanwhile). Every key of a
    room expires `idle_hours` after its last write."""

    PREFIX = "lineare:room:"
    ALIVE = "lineare:rooms"                 # code → when its teacher last wrote: counts the rooms alive

    def __init__(self, url, **options):
        super().__init__(**options)
        import redis

        self.client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
        self._student = self.client.register_script(_STUDENT)
        self._join = self.client.register_script(_JOIN)
        self.ttl = max(1, int(self.idle_s))

    def check(self):
        import redis

        try:
            self.client.ping()
        except redis.RedisError as error:
            raise OSError(f"Redis does not answer: {error}") from error

    def _keys(self, code, turn=None):
        base = self.PREFIX + code
        keys = {"room": base, "members": base + ":members", "version": base + ":version"}
        if turn is not None:
            keys.update(answers=f"{base}:answers:{turn}", sketches=f"{base}:sketches:{turn}")
        return keys

    def _room(self, code, pipe=None):
        values = (pipe or self.client).hgetall(self._keys(code)["room"])
        if not values:
            raise Refused("unknown")
        room = {k.decode(): v.decode() for k, v in values.items()}
        card = json.loads(room.get("card", "null"))
        correct = room.get("correct", "")
        return {"secret": room["secret"], "size": int(room["size"]), "phase": room["phase"], "turn": int(room["turn"]),
                "card": card, "correct": int(correct) if correct != "" else None,
                "explain": json.loads(room.get("explain", "null")), "results": json.loads(room["results"])}

    def _teacher_write(self, code, secret, change):
        """change(room, counts, pipe) queues the teacher's writes after checking the room; retried if the room, or
        the answers of its card, changed meanwhile (watched), so that an archived count misses no answer."""
        import redis

        keys = self._keys(code)
        while True:
            with self.client.pipeline() as pipe:
                try:
                    pipe.watch(keys["room"])
                    room = self._room(code, pipe)
                    if not (isinstance(secret, str) and hmac.compare_digest(room["secret"], digest(secret))):
                        raise Refused("teacher")
                    pipe.watch(self._keys(code, room["turn"])["answers"])
                    counts = self._counts(code, room, pipe)
                    pipe.multi()
                    result = change(room, counts, pipe)
                    pipe.execute()
                    return result
                except redis.WatchError:
                    continue

    def _touch(self, pipe, code, turn):
        pipe.incr(self._keys(code)["version"])
        for key in self._keys(code, turn).values():
            pipe.expire(key, self.ttl)
        pipe.zadd(self.ALIVE, {code: time.time()})

    def _counts(self, code, room, pipe=None):
        card = room["card"]
        if card is None:
            return []
        values = (pipe or self.client).hvals(self._keys(code, room["turn"])["answers"])
        return tally([int(v) for v in values], card["choices"])

    def _create(self, code, secret_hash, size):
        now = time.time()
        self.client.zremrangebyscore(self.ALIVE, "-inf", now - self.idle_s)
        if self.client.zcard(self.ALIVE) >= self.max_rooms:
            raise Refused("rooms")
        keys = self._keys(code)
        fields = {"secret": secret_hash, "size": size, "phase": "asking", "turn": 0, "results": "[]"}
        if not self.client.hsetnx(keys["room"], "secret", secret_hash):
            return False
        with self.client.pipeline() as pipe:
            pipe.hset(keys["room"], mapping=fields)
            pipe.set(keys["version"], 1)
            pipe.expire(keys["room"], self.ttl)
            pipe.expire(keys["version"], self.ttl)
            pipe.zadd(self.ALIVE, {code: now})
            pipe.execute()
        return True

    def is_teacher(self, code, secret):
        try:
            room = self._room(code)
        except Refused:
            return False
        return isinstance(secret, str) and hmac.compare_digest(room["secret"], digest(secret))

    def _archive(self, code, room, counts, pipe):
        results = archived(room["results"], room["card"], counts, room["correct"])
        old = self._keys(code, room["turn"])
        pipe.delete(old["answers"], old["sketches"])
        return results

    def goto(self, code, secret, card):
        card = check_card(card)

        def goto(room, counts, pipe):
            if same_card(room["card"], card) and room["phase"] != "ended":
                if room["card"] != card:
                    pipe.hset(self._keys(code)["room"], mapping={"card": json.dumps(card),
                                                                 "guess": "1" if card["guess"] else "0"})
                    self._touch(pipe, code, room["turn"])
                return room["turn"]
            results = self._archive(code, room, counts, pipe)
            turn = room["turn"] + 1
            pipe.hset(self._keys(code)["room"], mapping={
                "phase": "asking", "turn": turn, "card": json.dumps(card), "choices": card["choices"],
                "guess": "1" if card["guess"] else "0", "correct": "", "explain": "null",
                "results": json.dumps(results)})
            self._touch(pipe, code, turn)
            return turn
        return self._teacher_write(code, secret, goto)

    def show(self, code, secret):
        def show(room, _counts, pipe):
            if room["phase"] == "asking" and room["card"] is not None:
                pipe.hset(self._keys(code)["room"], "phase", "showing")
                self._touch(pipe, code, room["turn"])
        self._teacher_write(code, secret, show)

    def reveal(self, code, secret, correct, explain):
        def reveal(room, _counts, pipe):
            if room["phase"] in ANSWERING and room["card"] is not None:
                if not 0 <= int(correct) < room["card"]["choices"]:
                    raise ValueError(f"choice {correct} of {room['card']['choices']}")
                pipe.hset(self._keys(code)["room"], mapping={"phase": "revealed", "correct": int(correct),
                                                             "explain": json.dumps(explain)})
                self._touch(pipe, code, room["turn"])
        self._teacher_write(code, secret, reveal)

    def end(self, code, secret):
        def end(room, counts, pipe):
            if room["phase"] != "ended":
                results = self._archive(code, room, counts, pipe)
                pipe.hset(self._keys(code)["room"], mapping={"phase": "ended", "results": json.dumps(results)})
                self._touch(pipe, code, room["turn"])
        self._teacher_write(code, secret, end)

    def close(self, code, secret):
        def close(room, _counts, pipe):
            pipe.delete(*self._keys(code, room["turn"]).values())
            pipe.zrem(self.ALIVE, code)
        self._teacher_write(code, secret, close)

    def join(self, code, token=None):
        keys = self._keys(code)
        reply = self._join(keys=[keys["room"], keys["members"], keys["version"]],
                           args=[token if isinstance(token, str) else "", secrets.token_urlsafe(12), self.ttl])
        status = reply[0].decode()
        if status != "ok":
            raise Refused(status)
        return reply[1].decode()

    def _student_write(self, code, token, turn, value, kind):
        if not (isinstance(token, str) and isinstance(turn, int)):
            raise Refused("stranger")
        keys = self._keys(code, turn)
        status = self._student(keys=[keys["room"], keys["members"], keys["version"],
                                     keys["answers" if kind == "choice" else "sketches"]],
                               args=[token, turn, value, self.ttl, kind]).decode()
        if status != "ok":
            raise Refused(status)

    def answer(self, code, token, turn, choice):
        if not isinstance(choice, int) or isinstance(choice, bool):
            raise Refused("choice")
        self._student_write(code, token, turn, choice, "choice")

    def sketch(self, code, token, turn, points):
        self._student_write(code, token, turn, json.dumps(check_points(points)), "sketch")

    def state(self, code):
        try:
            room = self._room(code)
        except Refused:
            return None
        keys = self._keys(code, room["turn"])
        with self.client.pipeline(transaction=False) as pipe:
            pipe.scard(keys["members"])
            pipe.hlen(keys["sketches"])
            pipe.get(keys["version"])
            joined, sketched, version = pipe.execute()
        return public(code, room, self._counts(code, room), joined, sketched, int(version or 0))

    def versions(self, codes):
        codes = list(codes)
        if not codes:
            return {}
        values = self.client.mget([self._keys(c)["version"] for c in codes])
        return {c: int(v) for c, v in zip(codes, values) if v is not None}

    def chosen(self, code, token, turn):
        value = self.client.hget(self._keys(code, turn)["answers"], token)
        return int(value) if value is not None else -1

    def sketches(self, code, turn):
        return [json.loads(v) for v in self.client.hvals(self._keys(code, turn)["sketches"])]

    def expire(self):
        return 0                                   # Redis lets every key of an idle room go by itself


def open_rooms(url, **options):
    """The store named by `url`: sqlite:///absolute/path.sqlite, sqlite:relative.sqlite, redis://host:port/db."""
    parts = urlsplit(url)
    if parts.scheme == "sqlite":
        path = url[len("sqlite:"):]
        path = path[2:] if path.startswith("//") else path
        if not path:
            raise ValueError("sqlite: needs a file, e.g. sqlite:///var/lib/lineare/rooms.sqlite")
        return SqliteRooms(path, **options)
    if parts.scheme in ("redis", "rediss", "unix"):
        return RedisRooms(url, **options)
    raise ValueError(f"rooms: {url!r} is neither sqlite:PATH nor redis://HOST:PORT/DB")
