"""A live class on real servers, at the protocol level (bench.load's Teacher and Phone speak Bokeh's protocol as
the pages do): the classroom's several processes with the embedded store and with Redis, and the hosted mode
(two servers behind nginx). A projector and 60 phones spread over the processes: every phone sees the card
change, the tally counts every answer, the reveal reaches every phone, a second room open at the same time
gets nothing of the first; then what a hostile phone can try, each refused with nothing changed for the others."""
import asyncio
import csv
import io

import psutil
import pytest

from tests.needs import unavailable
from tornado.websocket import WebSocketClosedError
from test_host import require_nginx

from lineare.app.devtools import free_port, running_redis, running_server
from lineare.bench.load import Phone, Teacher, lesson
from lineare.deploy import host

CLASS = 60
OTHER = "/architectures?lesson=architectures&card=1&present=1&lang=en"
FIRST = "/softmax?lesson=softmax&card=1&present=1&lang=it"


def test_the_class_sketches_and_their_median_on_the_picture():
    """A draw-your-guess card: each phone's sketch and the median where the sketches are, in the picture's units."""
    import numpy as np
    from bokeh.plotting import figure

    from lineare.app.classroom.overlay import ClassSketches, axes, median_curve

    flat = lambda y, start=0.0, end=1.0: [[start, y], [end, y]]
    sketches = [flat(0.2), flat(0.4), flat(0.9), flat(0.1, end=0.5)]
    at, median = median_curve(sketches)
    assert np.allclose(median[at <= 0.5], 0.3) and np.allclose(median[at > 0.5], 0.4)   # four, then three
    at, median = median_curve([flat(0.6, 0.25, 0.75)])
    assert at.min() == 0.25 and at.max() == 0.75                    # only where a student drew
    picture = figure(x_range=(0, 64), y_range=(1e-3, 1), y_axis_type="log", x_axis_label="pairs")
    picture.line([0, 64], [1e-3, 1])
    overlay = ClassSketches(picture)
    overlay.draw(sketches[:3])
    assert len(overlay.each.data["xs"]) == 3 and overlay.each.data["xs"][0] == [0.0, 64.0]
    assert np.allclose(overlay.middle.data["y"], 10 ** (-3 + 0.4 * 3))       # the median, on the log axis
    assert axes(picture)["x"] == [0.0, 64.0, False, "pairs"] and axes(picture)["y"][2] is True
    downwards = ClassSketches(figure(x_range=(0, 10), y_range=(0, 8)), along="y")   # a row per token
    downwards.draw([[[0.5, 0.0], [0.5, 1.0]]])
    assert np.allclose(downwards.middle.data["x"], 5.0) and downwards.middle.data["y"][-1] == 8.0


def redis_or_skip():
    try:
        return running_redis()
    except RuntimeError as error:
        unavailable("redis-server", error)


class Served:
    def __init__(self, url, processes):
        self.url, self.processes = url, processes             # processes: [(psutil.Process, port)]

    def sessions(self):
        """Open connections on each server process (its websockets, and nginx's connections to it)."""
        counts = []
        for process, port in self.processes:
            counts.append(sum(1 for c in process.net_connections("tcp")
                              if c.status == psutil.CONN_ESTABLISHED and c.laddr.port == port))
        return counts


@pytest.fixture(scope="module", params=["processes-sqlite", "processes-redis", "hosted"])
def served(request, tmp_path_factory):
    mode = request.param
    if mode == "hosted":
        require_nginx()
        run_dir = tmp_path_factory.mktemp("hosted-class")
        args = host.parse(["--port", str(host.free_port()), "--address", "127.0.0.1", "--first-server-port", "0",
                           "--workers", "2", "--no-warm", "--max-sessions", "200", "--per-address", "200",
                           "--rate", "100000", "--burst", "100000", "--run-dir", str(run_dir)])
        with host.Host(args) as running:
            yield Served(running.url, [(psutil.Process(p.pid), port) for port, p in running.servers.items()])
        return
    with (redis_or_skip() if mode.endswith("redis") else _nothing()) as redis_url:
        rooms = redis_url or f"sqlite:///{tmp_path_factory.mktemp('rooms')}/rooms.sqlite"
        port = free_port()
        with running_server(port=port, processes=("--num-procs", "2", "--rooms", rooms)) as url:
            parent = next(p for p in psutil.process_iter() if str(port) in p.cmdline() and "lineare.app" in p.cmdline())
            children = _forked(parent)
            yield Served(url, [(child, port) for child in children])


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *_exc):
        return False


def _forked(parent):
    from lineare.bench.load import forked
    return forked(parent)


def run(coroutine):
    """The scenario on an event loop of its own thread (Playwright's sync API may hold this thread's)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, asyncio.wait_for(coroutine, 300)).result()


async def room_of_three(url, path):
    """A projector on `path` that started a class, and three phones in it."""
    teacher = Teacher(url)
    code = await teacher.start(path)
    phones = [Phone(url) for _ in range(3)]
    for phone in phones:
        await phone.join(code, "en")
    return teacher, code, phones


def test_a_class_of_sixty_on_every_process(served):
    async def scenario():
        log = lambda line: None
        # a second room, open all along on another lesson, with three phones of its own
        other, other_code, others = await room_of_three(served.url, OTHER)
        other_turn = others[0].screen["turn"]
        for i, phone in enumerate(others):
            await phone.answer(i % 2)
        await other.until("room", lambda room: room.get("answered") == 3)

        phones = [Phone(served.url) for _ in range(CLASS)]
        seen = await lesson(served.url, FIRST, phones, 2, 3.0, log)
        teacher, code = seen["teacher"], seen["code"]
        spread = served.sessions()
        # every answer counted, the reveal on every phone, every phone moved to the second card
        assert len(seen["tally_ms"]) == 2 * CLASS and len(seen["reveal_ms"]) == 2 * CLASS
        assert len(seen["next_ms"]) == CLASS
        assert {p.screen["turn"] for p in phones} == {teacher.room and phones[0].screen["turn"]}
        for phone in phones:
            assert phone.screen["phase"] == "revealed" and phone.screen["explain"]
            assert phone.screen["heading"].endswith(("card 2 of 5", "scheda 2 di 5"))
        italian = [p for i, p in enumerate(phones) if i % 2 == 1]
        assert all("scheda" in p.screen["heading"] for p in italian)
        # the projector's bars are the phones' choices
        assert teacher.room["counts"] == [seen["choices"][1].count(i) for i in range(len(teacher.room["counts"]))]
        # a 61st phone: the room is full, nothing changes
        late = Phone(served.url)
        with pytest.raises(Exception, match="full"):
            await late.join(code, "en")
        assert teacher.room["joined"] == CLASS
        # the end: the summary and the CSV count every answer of each card, nobody's name in them
        await teacher.command("end")
        await teacher.until("room", lambda room: room.get("phase") == "ended")
        rows = list(csv.DictReader(io.StringIO(teacher.room["csv"])))
        for number, made in ((1, seen["choices"][0]), (2, seen["choices"][1])):
            counts = [int(r["answers"]) for r in rows if r["card"] == str(number)]
            assert counts == [made.count(i) for i in range(len(counts))]
        assert [r["answered"] for r in teacher.room["summary"]] == [CLASS, CLASS]
        assert all(phone.token not in teacher.room["csv"] for phone in phones)
        for phone in phones:                              # each phone: the end, and its own score of two cards
            await phone.until("screen", lambda screen: screen.get("view") == "ended")
            assert phone.screen["count"] == 2 and 0 <= phone.screen["right"] <= 2
        await teacher.command("close")                     # the room is gone: every phone says so
        await teacher.until("room", lambda room: room.get("view") == "off")
        assert teacher.values.get("grant", "") == ""        # the tab forgets the secret
        for phone in phones:
            await phone.until("screen", lambda screen: screen.get("view") == "gone")
        await other.until("room", lambda room: True)
        # the other room saw nothing of this one: its own card, its own three answers
        assert (other.room["joined"], other.room["answered"], other.room["phase"]) == (3, 3, "asking")
        for phone in others:
            assert phone.screen["turn"] == other_turn and phone.screen["phase"] == "asking"
            assert all(value.get("heading", "").startswith("Lesson: Architectures")
                       for _t, attr, value in phone.seen if attr == "screen" and value.get("view") == "card")
        for viewer in [*phones, *others, late, teacher, other]:
            await viewer.close()
        return spread, [e for p in [*phones, *others, teacher, other] for e in p.errors]

    spread, errors = run(scenario())
    assert errors == []
    assert len(spread) == 2 and all(n > 0 for n in spread), f"connections per process: {spread}"


def test_what_a_hostile_phone_tries_is_refused(served):
    async def scenario():
        teacher, code, honest = await room_of_three(served.url, FIRST)
        turn = honest[0].screen["turn"]
        await honest[0].answer(0)
        await honest[1].answer(1)
        await teacher.until("room", lambda room: room.get("answered") == 2)
        before = dict(teacher.room)

        async def refused(phone, attribute, value):
            """True once the server answers the change with ERROR (refused before anything is applied)."""
            errors = len(phone.errors)
            if phone.dropped:                                   # closed after too many refusals
                return True
            try:
                await phone.write(attribute, value)
            except WebSocketClosedError:
                return True
            for _ in range(100):
                if len(phone.errors) > errors or phone.dropped:
                    return True
                await asyncio.sleep(0.05)
            return False

        async def told(phone, words):
            """The phone's own screen says why the room did not take it."""
            await phone.until("screen", lambda screen: words in (screen.get("message") or screen.get("error") or ""))
            return True

        # a phone that sends the teacher's commands: its page has no such thing, and the projector's is not its own
        hostile = Phone(served.url)
        await hostile.join(code, "en")
        assert await refused(hostile, "command", ["reveal", 1])
        assert await refused(hostile, "grant", "x")
        hostile.model, own = teacher.model, hostile.model
        assert await refused(hostile, "command", ["next", 1])
        hostile.model = own
        # a page of its own in presenter mode, with a made-up secret: no teacher of the room, its buttons move nothing
        pretender = Teacher(served.url)
        pretender.path = FIRST
        await pretender.follow("ClassPanel")
        await pretender.write("key", f"{code}.{'x' * 32}")
        await pretender.until("room", lambda room: room.get("view") == "gone")
        for name in ("reveal", "next", "close", "end"):
            await pretender.command(name)
        assert await refused(pretender, "command", ["open", 1])           # no such command
        # choices outside the card's (it has three): of another shape, refused before they are applied; within the
        # shape, refused by the room
        phone = Phone(served.url)
        await phone.join(code, "en")
        for wrong in ([turn, 99], [turn, -1], [turn, "1"], [turn, 1.5], [turn], "1", [turn, 0, 0]):
            assert await refused(phone, "answer", wrong), wrong
        for _ in range(200):                                    # the third refusal closes its connection
            if phone.dropped:
                break
            await asyncio.sleep(0.05)
        assert phone.dropped
        chooser = Phone(served.url)
        await chooser.join(code, "en")
        await chooser.write("answer", [turn, 3])
        assert await told(chooser, "Something went wrong")
        assert await refused(chooser, "sketch", [turn, [0.5, 2.0], [0.1, 0.1]])          # a point off the axes
        # flooding: past a dozen taps the phone's choices are not taken (one answer of its own, at most)
        flooder = Phone(served.url)
        await flooder.join(code, "en")
        for i in range(40):                    # spaced past Panel's debounce, which would merge them into one
            await flooder.write("answer", [turn, i % 2])
            await asyncio.sleep(0.06)
        assert await told(flooder, "Too fast")
        # guessed codes: each refused, and after five tries even the right code
        guesser = Phone(served.url)
        guesser.path = "/join?lang=en"
        await guesser.follow("Phone")
        for guess in ("AAAAAA", "BBBBBB", "CCCCCC", "DDDDDD", "EEEEEE", code):
            start = len(guesser.seen)
            await guesser.write("hello", [guess, ""])
            await guesser.until("screen", lambda screen: any(a == "screen" for _t, a, _v in guesser.seen[start:]))
        assert "Too many tries" in guesser.values["screen"]["error"]
        await asyncio.sleep(1.0)                                        # anything still on its way lands
        after = teacher.room
        for viewer in [*honest, hostile, pretender, phone, chooser, flooder, guesser, teacher]:
            await viewer.close()
        return before, after, [p.screen for p in honest], honest[0].token

    before, after, screens, _token = run(scenario())
    # nothing changed for the others: the same card, the same phase; the flooder's one answer counted once
    assert (after["phase"], after["here"], after["view"]) == ("asking", True, "on")
    assert before["answered"] == 2 and after["answered"] == 3
    assert after["joined"] == 3 + 4              # the honest three; the hostile one, phone, chooser, flooder
    assert all(screen["phase"] == "asking" for screen in screens)


def test_reveal_acts_on_the_projectors_card_as_a_student_would():
    """Reveal sends the page's lesson card what a student's acting sends (the card layer's LessonCard): the right
    choice, the class's median sketch on a draw-your-guess card, the player's frame reached on a played card."""
    import param

    from lineare.app.classroom.projector import page_reveal

    class Card(param.Parameterized):                    # the LessonCard's browser-written parameters
        chosen = param.Integer(default=-1)
        played = param.Boolean(default=False)
        guess = param.List(default=[])

    class Guess:
        along = "x"

    class Record:
        def __init__(self, guess=None, at=None):
            self.guess, self.at = guess, at

    widget = Card()
    page_reveal(widget, Record(guess=Guess()))(2, [[[0, 0.2], [1, 0.2]], [[0, 0.6], [1, 0.6]], [[0, 0.4], [1, 0.4]]])
    assert widget.chosen == 2 and not widget.played
    assert len(widget.guess) > 2 and all(abs(y - 0.4) < 1e-9 for _x, y in widget.guess)     # the median line
    played = Card()
    page_reveal(played, Record(at=lambda store: 5))(1, [])
    assert (played.chosen, played.played, played.guess) == (1, True, [])
    assert page_reveal(None, Record()) is None and page_reveal(param.Parameterized(), Record()) is None


def test_the_join_link_is_an_address_the_phones_reach(monkeypatch):
    from lineare.app import serve
    from lineare.app.classroom import live, projector

    monkeypatch.setattr(serve, "lan_addresses", lambda: ["192.168.1.20"])
    hosted = {"Host": "demo.example.org", "X-Forwarded-Proto": "https"}
    assert projector.join_link(hosted, "K7QF2M") == ("https://demo.example.org/join?code=K7QF2M", True)
    monkeypatch.setenv(live.LAN_ENV, "0")
    assert projector.join_link({"Host": "localhost:5006"}, "K7QF2M") == ("http://localhost:5006/join?code=K7QF2M",
                                                                         False)      # the panel says: --lan
    monkeypatch.setenv(live.LAN_ENV, "1")           # python -m lineare.app --lan: the laptop's address on the network
    assert projector.join_link({"Host": "127.0.0.1:5006"}, "K7QF2M") == ("http://192.168.1.20:5006/join?code=K7QF2M",
                                                                         True)
    assert projector.join_link({"Host": "192.168.1.20:5006"}, "K7QF2M")[0] == "http://192.168.1.20:5006/join?code=K7QF2M"
