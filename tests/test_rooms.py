"""A live class's room (app/classroom/store.py), in both stores: SQLite (the classroom's default) and Redis
(a redis-server started here). The same rules in each: who may do what, in which phase, how many."""
import json
import os
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.needs import unavailable

from lineare.app.classroom.store import (CODE_ALPHABET, CODE_LENGTH, Refused, RedisRooms, SqliteRooms, clean_code,
                                 open_rooms)
from lineare.app.devtools import running_redis

CARD = {"slug": "state", "number": 2, "choices": 3, "guess": None}
GUESS = {"slug": "memory-fails", "number": 1, "choices": 2,
         "guess": {"x": [0, 64, False, "pairs"], "y": [0, 1, False, "error"], "along": "x"}}


@pytest.fixture(scope="module")
def redis_url():
    try:
        with running_redis() as url:
            yield url
    except RuntimeError as error:
        unavailable("redis-server", error)


@pytest.fixture(params=["sqlite", "redis"])
def rooms(request, tmp_path):
    if request.param == "sqlite":
        return SqliteRooms(tmp_path / "rooms.sqlite")
    store = RedisRooms(request.getfixturevalue("redis_url"))
    store.client.flushdb()
    return store


def refused(reason, call, *args):
    with pytest.raises(Refused) as caught:
        call(*args)
    assert caught.value.reason == reason


def test_a_class_goes_through_a_card(rooms):
    code, secret = rooms.open(size=60)
    assert len(code) == CODE_LENGTH and set(code) <= set(CODE_ALPHABET) and len(secret) >= 32
    turn = rooms.goto(code, secret, CARD)
    phones = [rooms.join(code) for _ in range(5)]
    assert len(set(phones)) == 5
    for phone, choice in zip(phones, [0, 1, 1, 2, 1]):
        rooms.answer(code, phone, turn, choice)
    rooms.answer(code, phones[0], turn, 1)                        # changed before the reveal
    state = rooms.state(code)
    assert (state["phase"], state["joined"], state["answered"], state["counts"]) == ("asking", 5, 5, [0, 4, 1])
    assert state["correct"] is None and state["explain"] is None   # nothing of the truth before the reveal
    rooms.show(code, secret)
    rooms.answer(code, phones[4], turn, 2)                        # still changeable while the bars are shown
    assert rooms.state(code)["counts"] == [0, 3, 2]
    rooms.reveal(code, secret, 1, {"en": "It reads back 21.", "it": "Rilegge 21."})
    refused("late", rooms.answer, code, phones[1], turn, 0)       # no change after the reveal
    state = rooms.state(code)
    assert (state["phase"], state["correct"], state["explain"]["it"]) == ("revealed", 1, "Rilegge 21.")
    assert rooms.chosen(code, phones[0], turn) == 1 and rooms.chosen(code, "nobody", turn) == -1
    following = rooms.goto(code, secret, {**CARD, "number": 3})
    refused("late", rooms.answer, code, phones[0], turn, 1)        # a tap for the card before is not counted
    rooms.answer(code, phones[0], following, 0)
    rooms.end(code, secret)
    results = rooms.state(code)["results"]
    assert [(r["number"], r["counts"], r["correct"], r["answered"]) for r in results] == \
        [(2, [0, 3, 2], 1, 5), (3, [1, 0, 0], None, 1)]
    assert json.dumps(rooms.state(code)).count(phones[0]) == 0     # no token in what the screens are sent
    rooms.close(code, secret)
    assert rooms.state(code) is None
    refused("unknown", rooms.join, code)


def test_only_the_teachers_secret_moves_the_room(rooms):
    code, secret = rooms.open()
    turn = rooms.goto(code, secret, CARD)
    phone = rooms.join(code)
    rooms.answer(code, phone, turn, 0)
    before = rooms.state(code)
    for wrong in ("", "x" * 32, phone, secret[:-1] + ("A" if secret[-1] != "A" else "B"), None):
        refused("teacher", rooms.show, code, wrong)
        refused("teacher", rooms.reveal, code, wrong, 0, {})
        refused("teacher", rooms.goto, code, wrong, {**CARD, "number": 3})
        refused("teacher", rooms.end, code, wrong)
        refused("teacher", rooms.close, code, wrong)
        assert not rooms.is_teacher(code, wrong)
    assert rooms.state(code) == before and rooms.is_teacher(code, secret)
    other, other_secret = rooms.open()
    refused("teacher", rooms.show, code, other_secret)             # a teacher of another room is a stranger here


def test_a_phone_may_only_answer_among_the_cards_choices_in_its_own_room(rooms):
    code, secret = rooms.open()
    other, other_secret = rooms.open()
    turn = rooms.goto(code, secret, CARD)
    other_turn = rooms.goto(other, other_secret, CARD)
    phone = rooms.join(code)
    for choice in (-1, 3, 99, 1.5, "1", None, True):
        refused("choice", rooms.answer, code, phone, turn, choice)
    refused("stranger", rooms.answer, other, phone, other_turn, 0)     # a token of one room in another
    refused("stranger", rooms.answer, code, "made-up", turn, 0)
    refused("late", rooms.answer, code, phone, turn + 1, 0)
    refused("unknown", rooms.answer, "ZZZZZZ", phone, turn, 0)
    refused("sketch", rooms.sketch, code, phone, turn, [[0.1, 0.2], [0.5, 0.5]])     # not a guess card
    assert rooms.state(code)["answered"] == rooms.state(other)["answered"] == 0


def test_sketches_are_kept_one_per_phone_and_checked(rooms):
    code, secret = rooms.open()
    turn = rooms.goto(code, secret, GUESS)
    phones = [rooms.join(code) for _ in range(3)]
    for i, phone in enumerate(phones):
        rooms.sketch(code, phone, turn, [[0.0, 0.1 * i], [1.0, 0.5]])
    rooms.sketch(code, phones[0], turn, [[0.0, 0.9], [0.5, 0.9], [1.0, 0.9]])     # drawn again: replaced
    for bad in ([[0.1, 0.2]], [[0, 0], [1, 2]], [[0, 0], [1, float("nan")]], [[0, 0]] * 65, "points", [[0, 0, 0]] * 2):
        refused("sketch", rooms.sketch, code, phones[1], turn, bad)
    kept = sorted(rooms.sketches(code, turn))
    assert len(kept) == 3 and [[0.0, 0.9], [0.5, 0.9], [1.0, 0.9]] in kept
    assert rooms.state(code)["sketched"] == 3


def test_a_room_takes_its_size_and_a_phone_that_reloads_keeps_its_place(rooms):
    code, secret = rooms.open(size=3)
    phones = [rooms.join(code) for _ in range(3)]
    refused("full", rooms.join, code)
    refused("full", rooms.join, code, "a-token-of-my-own")
    assert rooms.join(code, phones[1]) == phones[1]               # a reload: the same place, not a new one
    assert rooms.state(code)["joined"] == 3


def test_joining_at_once_never_passes_the_size(rooms):
    code, _secret = rooms.open(size=10)

    def join(_i):
        try:
            return rooms.join(code)
        except Refused as refusal:
            return refusal.reason
    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(join, range(30)))
    assert outcomes.count("full") == 20 and rooms.state(code)["joined"] == 10


def test_codes_are_read_as_typed():
    assert clean_code("k7qf2m") == "K7QF2M" and clean_code(" K7Q-F2M ") == "K7QF2M"
    assert clean_code("k7qf2mx") is None                            # 7 characters: not a code
    assert clean_code("K7QF2O") is None and clean_code("") is None and clean_code(None) is None
    assert clean_code("x" * 10_000) is None
    assert clean_code(" " * 14 + "K7QF2M") == "K7QF2M" and clean_code(" " * 15 + "K7QF2M") is None   # 20 typed, 21


def test_idle_rooms_are_gone(tmp_path):
    rooms = SqliteRooms(tmp_path / "rooms.sqlite", idle_hours=0.5 / 3600)
    code, secret = rooms.open()
    time.sleep(0.6)
    assert rooms.state(code) is None and rooms.versions([code]) == {}
    refused("unknown", rooms.join, code)
    assert rooms.expire() == 1


def test_idle_rooms_are_gone_from_redis(redis_url):
    rooms = RedisRooms(redis_url, idle_hours=1 / 3600)
    code, secret = rooms.open()
    rooms.goto(code, secret, CARD)
    rooms.join(code)
    time.sleep(2.2)
    assert rooms.state(code) is None and rooms.versions([code]) == {}
    assert not [k for k in rooms.client.keys(f"{rooms.PREFIX}{code}*")]


def test_a_store_holds_no_more_than_its_rooms(rooms):
    rooms.max_rooms = 2
    rooms.open()
    rooms.open()
    refused("rooms", rooms.open)


def test_the_store_holds_nothing_personal(tmp_path):
    rooms = SqliteRooms(tmp_path / "rooms.sqlite")
    code, secret = rooms.open()
    turn = rooms.goto(code, secret, CARD)
    rooms.answer(code, rooms.join(code), turn, 2)
    db = sqlite3.connect(tmp_path / "rooms.sqlite")
    stored = json.dumps([db.execute(f"SELECT * FROM {t}").fetchall() for t in ("rooms", "members", "answers")])
    assert secret not in stored                                   # only its hash
    assert oct(os.stat(tmp_path / "rooms.sqlite").st_mode & 0o777) == "0o600"


def test_processes_share_one_sqlite_room(tmp_path):
    """Two other processes answer in the room this one opened (what the classroom's server processes do)."""
    path = tmp_path / "rooms.sqlite"
    rooms = SqliteRooms(path)
    code, secret = rooms.open()
    turn = rooms.goto(code, secret, CARD)
    script = ("import sys; from app.classroom.store import SqliteRooms; r = SqliteRooms(sys.argv[1]); "
              "[r.answer(sys.argv[2], r.join(sys.argv[2]), int(sys.argv[3]), i % 3) for i in range(20)]")
    workers = [subprocess.Popen([sys.executable, "-c", script, str(path), code, str(turn)]) for _ in range(2)]
    assert [w.wait(60) for w in workers] == [0, 0]
    assert rooms.state(code)["counts"] == [14, 14, 12] and rooms.state(code)["joined"] == 40


def test_open_rooms_reads_the_url(tmp_path, redis_url):
    assert isinstance(open_rooms(f"sqlite:///{tmp_path}/a.sqlite"), SqliteRooms)
    assert isinstance(open_rooms(f"sqlite:{tmp_path}/b.sqlite"), SqliteRooms)
    assert isinstance(open_rooms(redis_url), RedisRooms)
    for bad in ("postgres://x", "sqlite:", "rooms.sqlite"):
        with pytest.raises(ValueError):
            open_rooms(bad)


def test_what_a_phone_and_a_projector_write_passes_the_allow_list_only_in_its_shape():
    """Each value our browser code sends is plain data the allow-list lets through (two lists deep at most) and of
    its component's shape; anything else is refused before it is applied."""
    from lineare.app.classroom.phone import Phone
    from lineare.app.classroom.projector import ClassPanel
    from lineare.app.server.websocket import _plain

    sent = {(Phone, "hello"): ["K7QF2M", ""], (Phone, "answer"): [3, 1],
            (Phone, "sketch"): [3, [0.0, 0.25], [0.5, 0.5], [1.0, 0.875]],
            (ClassPanel, "command"): ["reveal", 4], (ClassPanel, "key"): "K7QF2M." + "x" * 32}
    for (component, attr), value in sent.items():
        assert _plain(value) and component.browser_accepts(attr, value), (component, attr)
    refused = {(Phone, "answer"): [[[3, 1]], [3, 8], [3, -1], [3, True], ["3", 1], [3], [3, 1, 1]],
               (Phone, "sketch"): [[3, [0.5, 1.5], [0, 0]], [3, [0, 0]], [3, [[0, 0], [1, 1]]], [3] + [[0, 0]] * 65],
               (Phone, "hello"): [["x" * 21, ""], ["K7QF2M"], ["K7QF2M", "t" * 41]],
               (ClassPanel, "command"): [["open", 1], ["reveal", -1], ["reveal"]], (ClassPanel, "key"): ["k" * 81]}
    for (component, attr), values in refused.items():
        for value in values:
            assert not component.browser_accepts(attr, value), (component, attr, value)


def test_one_address_opens_few_rooms_and_guesses_few_codes():
    from lineare.app.classroom import phone, projector

    opened = [projector.may_open("198.51.100.7") for _ in range(projector.ROOMS_PER_ADDRESS + 1)]
    assert opened == [True] * projector.ROOMS_PER_ADDRESS + [False] and projector.may_open("198.51.100.8")
    missed = [phone.may_miss("198.51.100.7") for _ in range(phone.MISSES + 1)]
    assert missed == [True] * phone.MISSES + [False] and phone.may_miss("198.51.100.8")
    # the documented numbers, written out: 5 rooms per address, 20 wrong codes, 12 taps of one phone at once
    assert (projector.ROOMS_PER_ADDRESS, phone.MISSES, phone.TAPS) == (5, 20, 12)
    taps = phone.Bucket(phone.TAPS, phone.TAP_EVERY_S)
    assert [taps.take() for _ in range(13)] == [True] * 12 + [False]


def test_a_room_takes_a_class_of_60_by_default(tmp_path):
    rooms = SqliteRooms(tmp_path / "rooms.sqlite")
    code, _secret = rooms.open()
    assert len({rooms.join(code) for _ in range(60)}) == 60
    refused("full", rooms.join, code)


def test_processes_starting_together_all_open_a_fresh_sqlite_file(tmp_path):
    """The hosted start runs every server's store check at once on a fresh file; switching it to WAL mode does
    not wait for SQLite's busy timeout, and one of two servers once exited with "database is locked"."""
    path = tmp_path / "rooms.sqlite"
    starts = time.time() + 2.0
    script = ("import sys, time; from app.classroom.store import SqliteRooms; "
              f"time.sleep(max(0.0, {starts} - time.time())); "
              "[SqliteRooms(sys.argv[1]).check() for _ in range(10)]")
    processes = [subprocess.Popen([sys.executable, "-c", script, str(path)], stderr=subprocess.PIPE, text=True)
                 for _ in range(8)]
    errors = [p.communicate(timeout=60)[1] for p in processes]
    assert [p.returncode for p in processes] == [0] * 8, "\n".join(errors)
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
