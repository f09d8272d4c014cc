"""What each page can export, read from the stores of one session: scenes (frames), tables, words.

    page = PAGES["state"](session)        # session.stores holds the page's store(s)
    page.length()                          # frames of the current run (1: a still page)
    page.scene(t)                          # a scene.Scene: what frame t shows
    page.tables()                          # {name: scene.Table}

An adapter computes nothing new: it reads the store's run with the page's own model functions
(`head_frame`, `limits_of`, `rolling_median`, …), rounds colour ranges with `plots.nice_limit` as the
pictures do, and words frames with the page's own text functions, turned from HTML into plain lines.
"""
from html.parser import HTMLParser

import numpy as np

from app.components.curves import BLUE, VERMILLION
from app.components.plots import nice_limit
from app.export.draw import fade
from app.export.scene import Bars, Curves, Heat, Scene, Series, Strip, Table
from app.i18n import N_, _, format_number
from app.urlstate import serialize
from app.variants import REGISTRY


class _Text(HTMLParser):
    """Our own HTML (already escaped) → lines of text; block elements and <br> end a line."""

    BLOCKS = {"p", "div", "br", "li", "tr", "h1", "h2", "h3"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.lines, self.line = [], ""

    def handle_starttag(self, tag, attrs):
        if tag in self.BLOCKS:
            self.flush()

    handle_endtag = lambda self, tag: self.flush() if tag in self.BLOCKS else None

    def handle_data(self, data):
        self.line += data

    def flush(self):
        text = " ".join(self.line.split())
        if text:
            self.lines.append(text)
        self.line = ""


def plain(markup):
    """Lines of plain text of one of the page's HTML snippets."""
    parser = _Text()
    parser.feed(markup)
    parser.close()
    parser.flush()
    return parser.lines


class _Boxes(HTMLParser):
    """A token strip's HTML (texts.token_strip, texts.trained_strip) → its boxes: token, mark, mood, ask."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.boxes, self.in_mark = [], False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        if "data-step" in attrs:
            self.boxes.append({"token": "", "mark": "", "mood": "", "ask": "ask" in classes})
        elif self.boxes and "answer" in classes:
            self.in_mark = True
        elif self.boxes and self.in_mark and ({"ok", "bad"} & set(classes)):
            self.boxes[-1]["mood"] = "ok" if "ok" in classes else "bad"

    def handle_endtag(self, tag):
        if tag == "div":
            self.in_mark = False

    def handle_data(self, data):
        if self.boxes:
            self.boxes[-1]["mark" if self.in_mark else "token"] += data


def strip_from_html(markup, current):
    parser = _Boxes()
    parser.feed(markup)
    boxes = parser.boxes
    return Strip(tokens=[b["token"].strip() for b in boxes], current=current,
                 marks=[" ".join(b["mark"].split()) for b in boxes], moods=[b["mood"] for b in boxes],
                 asks=[b["ask"] for b in boxes])


class PageExport:
    """What one page exports; subclasses read their store(s) from `session.stores`."""

    slug = None
    package = None                     # app.dashboards.<package>.view: the page's own URL code
    title_msgid = None

    def __init__(self, session, frame=None, speed=None):
        self.session = session
        self.frame, self.speed = frame, speed      # the player's, from the URL (None: not given)

    @property
    def store(self):
        return self.session.stores[self.slug]

    @property
    def language(self):
        return self.session.language

    @classmethod
    def open(cls, session, args):
        """Make this page's store(s) in `session` from untrusted URL args, with the page's own URL code
        (its view's `open_store`); URL problems become the session's notices."""
        import importlib

        view = importlib.import_module(f"app.dashboards.{cls.package}.view").build.__self__
        view.open_store(session, args)
        return cls(session)

    def title(self):
        return _(self.title_msgid)

    def settings(self):
        """The page's settings as its URL writes them."""
        return {key: serialize(getattr(self.store, name)) for name, key in self.store.URL.items()}

    def footer(self):
        words = " · ".join(f"{key}={value}" for key, value in self.settings().items())
        return f"Lineare · /{self.slug} · {words}"

    def length(self):
        return 1

    def default_frame(self):
        """The frame a picture shows unless told: the URL's, else the one the page opens on."""
        frame = self.opening_frame() if self.frame is None else self.frame
        return min(max(int(frame), 0), self.length() - 1)

    def opening_frame(self):
        return 0

    def scene(self, t):
        raise NotImplementedError

    def captions(self, t):
        return self.scene(t).caption

    TABLES = {}                        # table name → msgid of its title; `table_<name>()` makes it
    animated = False                   # a run of frames (GIF, MP4, lesson), or one picture

    def tables(self):
        """{name: translated title} of the page's tables."""
        return {name: _(title) for name, title in self.TABLES.items()}

    def table(self, name):
        return getattr(self, f"table_{name}")()

    def explanation(self):
        """The page's main explanation at the session's level (Markdown with $…$ formulas)."""
        return ""

    def step(self, t):
        return _("Step {t} of {n}").format(t=t + 1, n=self.length()) if self.length() > 1 else ""


# ----------------------------------------------------------------------------- The state fills up

class StatePage(PageExport):
    slug, package, title_msgid = "state", "state_fills_up", "The state fills up"
    TABLES = {"steps": N_("Tokens, answers and memory"), "pictures": N_("Every picture at every step")}
    animated = True

    def length(self):
        return self.store.length()

    def title(self):
        return f"{_(self.title_msgid)} · {_(REGISTRY[self.store.variant].label)}"

    def explanation(self):
        record = REGISTRY[self.store.variant]
        if self.session.level == "superiore":
            return f"**{_(record.label)}** ({record.papers}). {_(record.rule)}\n\n{record.formula}"
        return f"**{_(record.label)}.** {_(record.rule)}"

    def _runs(self):
        """[(name or None, records, limits, head)] of every head on the page, and the run's variant."""
        store = self.store
        if store.mode == "trained":
            run = store.trained
            if run is None:
                return [], store.variant
            config = run.sidecar["config"]
            layers = [l for l in range(config["n_layers"]) if store.layer in ("both", str(l + 1))] or [0]
            shown = []
            for l in layers:
                for h in range(config["n_heads"]):
                    name = _("Layer {n}").format(n=l + 1) if config["n_heads"] == 1 else \
                        _("Layer {n}, head {h}").format(n=l + 1, h=h + 1)
                    shown.append((name, run.layers[l], run.limits[l], h))
            return shown, run.variant
        result = store.result
        return [(None, result.records, store.limits, h) for h in range(store.heads)], result.variant

    def scene(self, t):
        from app.dashboards.state_fills_up.model import head_frame

        store = self.store
        shown, variant = self._runs()
        panels = []
        for i, (name, records, limits, head) in enumerate(shown):
            frame = head_frame(variant, records, head, t)
            panels += _head_panels(frame, limits, head, name, full=(i == 0))
        strip, caption = None, []
        from app.dashboards.state_fills_up import texts
        if store.mode == "trained":
            run = store.trained
            if run is None:
                caption = [texts.failure_message(store.failure)] if store.failure else []
            else:
                strip = strip_from_html(texts.trained_strip(run), t)
                caption = plain(texts.trained_memory_line(run, t)) + plain(texts.prediction_html(run, t))
        else:
            result = store.result
            strip = strip_from_html(texts.token_strip(result), t)
            caption = plain(texts.memory_line(result, t)) + plain(texts.answer_html(result, t))
        return Scene(self.title(), panels, strip=strip, caption=caption, step=self.step(t), footer=self.footer())

    def table_pictures(self):
        from app.dashboards.state_fills_up.model import head_frame

        shown, variant = self._runs()
        rows, ranges = [], {}
        for name, records, limits, head in shown:
            where = name or _("Head {n}").format(n=head + 1)
            ranges.update({f"{where} {key}": nice_limit(value) for key, value in limits.items()})
            for t in range(self.length()):
                frame = head_frame(variant, records, head, t)
                for picture, values in _frame_arrays(frame).items():
                    for (r, c), value in np.ndenumerate(np.atleast_2d(values)):
                        rows.append([t + 1, where, picture, r, c, value])
        return Table("pictures", _(self.TABLES["pictures"]), ["step", "head", "picture", "row", "col", "value"], rows,
                     notes=[_("value: the engine's numbers (float32), no unit. state, write: the memory S_t and "
                              "what the token writes [d_v × d_k]; kept: the share of each key column kept; "
                              "correction: prediction, target, error [3 × d_v]; output: the read-out o_t; cache: "
                              "the cached values v_i (empty after t); attention: the weights over the cache."),
                            _("Colour range of each picture (the run's fixed ± limit): {ranges}").format(
                                ranges=", ".join(f"{k} {format_number(v)}" for k, v in ranges.items()))])

    def table_steps(self):
        strip = self.scene(0).strip
        rows = [] if strip is None else [
            [t + 1, strip.tokens[t], strip.marks[t], strip.moods[t], " ".join(self.captions(t))]
            for t in range(self.length())]
        return Table("steps", _(self.TABLES["steps"]), ["step", "token", "answer", "result", "caption"], rows,
                     notes=[_("answer: the answer under a question; result: ok (right) or bad (wrong); caption: "
                              "the page's lines for that step.")])

    def captions(self, t):
        from app.dashboards.state_fills_up import texts

        store = self.store
        if store.mode == "trained":
            run = store.trained
            return [] if run is None else plain(texts.trained_memory_line(run, t)) + plain(texts.prediction_html(run, t))
        return plain(texts.memory_line(store.result, t)) + plain(texts.answer_html(store.result, t))


def _frame_arrays(frame):
    """A model.HeadFrame's pictures by name (those the variant has)."""
    names = ("state", "write", "kept", "correction", "output", "cache", "attention")
    return {n: getattr(frame, n) for n in names if getattr(frame, n) is not None}


def _head_panels(frame, limits, head, name, full):
    """The cards of one head, as the page draws them (`full`: every card; else its memory only)."""
    titles = {("head", "cache"): _("Head {n}: value cache"), ("head", "state"): _("Head {n}: memory S"),
              ("name", "cache"): _("{name}: value cache"), ("name", "state"): _("{name}: memory S")}
    owner = lambda what: titles["head" if name is None else "name", what].format(n=head + 1, name=name)
    key_dim, value_dim = _("key dimension"), _("value dimension")
    if frame.cache is not None:                     # softmax: a cache that grows, and where the question looks
        panels = [Heat(owner("cache"), frame.cache, nice_limit(limits["target"]), value_dim,
                       _("position in the sequence"))]
        if full:
            panels.append(Bars(_("Where the question looks"), frame.attention, (0, 1.05),
                               _("position in the sequence"), _("attention weight"), color="#b35806"))
    else:
        panels = [Heat(owner("state"), frame.state, nice_limit(limits["state"]), key_dim, value_dim)]
        if full:
            beta = "" if frame.beta is None else f"β = {format_number(frame.beta, 2)}"
            panels += [Heat(_("What this token writes"), frame.write, nice_limit(limits["write"]), key_dim, value_dim),
                       Bars(_("What each column keeps"), frame.kept, (0, 1.05), key_dim, _("kept"), subtitle=beta)]
    if full and frame.correction is not None:
        panels.append(Heat(_("Correction"), frame.correction, nice_limit(limits["delta"]), value_dim,
                           row_labels=[_("prediction"), _("target"), _("error")]))
    if full:
        panels.append(Heat(_("Read-out"), frame.output, nice_limit(limits["output"]), value_dim,
                           row_labels=[_("answer")]))
    return panels


# ----------------------------------------------------------------------------- Two bills

class TwoBillsPage(PageExport):
    slug, package, title_msgid = "two-bills", "two_bills", "Two bills"
    TABLES = {"tokens": N_("Generating, one token at a time"), "measurements": N_("Your measurements: time "
                                                                                  "against context"),
              "calculator": N_("Memory against context length")}
    animated = True

    @classmethod
    def open(cls, session, args):
        from app.dashboards.two_bills.calculator import CalculatorStore
        from app.urlstate import read_query

        page = super().open(session, args)
        values, notices = read_query(CalculatorStore, CalculatorStore.URL, args)    # as the page does
        session.store(cls.slug + "/calculator", lambda: CalculatorStore(**values))
        session.add_notices("url", notices)
        return page

    def length(self):
        return self.store.result.tokens

    def opening_frame(self):
        return self.length() - 1              # the page opens on the whole run

    def scene(self, t):
        from app.dashboards.two_bills.model import byte_unit, rolling_median

        result = self.store.result
        t = min(t, result.tokens - 1)
        name = _(REGISTRY[result.variant].label)
        cache_max = max(result.kv_cache_bytes.max(), result.state_bytes.max())
        size, symbol = byte_unit(cache_max)
        upto = slice(0, t + 1)
        held, cache, state = result.held, result.kv_cache_bytes / size, result.state_bytes / size
        faded = lambda colour: "#%02x%02x%02x" % fade(colour, 0.65)                  # the page's alpha 0.35
        memory = [Series(_("KV cache (softmax)"), held[upto], cache[upto], VERMILLION, width=4),
                  Series(_("state ({model})").format(model=name), held[upto], state[upto], BLUE, dash=True, width=4),
                  Series("", held[t:t + 1], cache[t:t + 1], VERMILLION, kind="dots", size=12),
                  Series("", held[t:t + 1], state[t:t + 1], BLUE, kind="dots", size=12, marker="square")]
        if result.context:
            first = (result.kv_cache_bytes[0] - result.bytes_per_token) / size
            memory.insert(0, Series(_("already in memory"), np.array([0, result.context]), np.array([0, first]),
                                    VERMILLION, dash=True, width=2))
        numbers = np.arange(1, result.tokens + 1)
        soft_median, state_median = rolling_median(result.softmax_ms), rolling_median(result.state_ms)
        top = max(soft_median.max(), state_median.max())
        times = [Series("", numbers[upto], result.softmax_ms[upto], faded(VERMILLION), kind="dots"),
                 Series("", numbers[upto], result.state_ms[upto], faded(BLUE), kind="dots", marker="square"),
                 Series(_("softmax"), numbers[upto], soft_median[upto], VERMILLION, width=4),
                 Series(_("state ({model})").format(model=name), numbers[upto], state_median[upto], BLUE,
                        dash=True, width=4)]
        panels = [Curves(_("Memory held while generating"), memory,
                         (0, held[-1] + max(1, held[-1] // 50)), (0, 1.12 * cache_max / size),
                         _("tokens in memory"), _("memory ({unit})").format(unit=symbol)),
                  Curves(_("Time per token, measured now"), times, (0, result.tokens + 1), (0, 1.6 * top),
                         _("generated token"), _("milliseconds per token"))]
        return Scene(self.title(), panels, caption=self.captions(t), step=self.step(t), footer=self.footer())

    def captions(self, t):
        from app.dashboards.two_bills.model import format_bytes, format_ms, rolling_median

        result = self.store.result
        name = _(REGISTRY[result.variant].label)
        lines = [_("Token {t} of {n} · tokens in memory: {held}").format(
            t=t + 1, n=result.tokens, held=format_number(int(result.held[t])))]
        lines.append(f"{_('KV cache (softmax)')}: {format_bytes(result.kv_cache_bytes[t])}, "
                     + _("grows by {bytes} at every token").format(bytes=format_bytes(result.bytes_per_token))
                     + f" · {_('state ({model})').format(model=name)}: {format_bytes(result.state_bytes[t])}, "
                     + _("the same at every token"))
        soft_ms = rolling_median(result.softmax_ms[:t + 1])[-1]
        state_ms = rolling_median(result.state_ms[:t + 1])[-1]
        lines.append(_("Typical time per token (median of the last 9): softmax {softmax} ms, {model} {state} ms.")
                     .format(softmax=format_ms(soft_ms), model=name, state=format_ms(state_ms)))
        return lines

    def explanation(self):
        if self.session.level == "superiore":
            return _("Softmax attention pays two bills. **Work**: a prompt of $n$ tokens costs $O(n^2 d)$ per "
                     "layer, since every query meets every earlier key. **Memory**: to generate token $t$ it "
                     "reads a KV cache of $t$ keys and $t$ values, which grows as $O(t)$ and is never freed. A "
                     "fixed-size state $S_t \\in \\mathbb{R}^{d_v \\times d_k}$ costs $O(d_k d_v)$ per token, "
                     "in time and in memory, whatever $t$ is (Katharopoulos et al. 2020).")
        return _("Softmax attention pays two bills. **Work**: to read a text, it compares every token "
                 "with every other one. **Memory**: while it writes, it keeps a key and a value for every "
                 "token it has seen, and never throws any away. A model with a fixed-size state pays a "
                 "fixed amount instead. Below, one layer of each kind generates the same tokens, one at a "
                 "time; further down, the same bills for real models.")

    def table_tokens(self):
        from app.dashboards.two_bills.model import rolling_median

        result = self.store.result
        soft_median, state_median = rolling_median(result.softmax_ms), rolling_median(result.state_ms)
        rows = [[t + 1, result.held[t], result.kv_cache_bytes[t], result.state_bytes[t], result.softmax_ms[t],
                 result.state_ms[t], soft_median[t], state_median[t]] for t in range(result.tokens)]
        setup = _("Softmax attention against {model}: one layer each, {heads} heads with d_k = d_v = {dim}, "
                  "numbers in float32, random tokens.").format(model=_(REGISTRY[result.variant].label),
                                                               heads=result.heads, dim=result.dim)
        return Table("tokens", _(self.TABLES["tokens"]),
                     ["token", "tokens_in_memory", "kv_cache_bytes", "state_bytes", "softmax_ms", "state_ms",
                      "softmax_ms_median9", "state_ms_median9"], rows,
                     notes=[setup, _("bytes: what the engine's step records report; ms: the wall-clock time of "
                                     "each step on the machine that made this file; median9: the median of the "
                                     "last 9 tokens.")])

    def table_measurements(self):
        return Table("measurements", _(self.TABLES["measurements"]),
                     ["heads", "dim", "tokens_in_memory", "softmax_ms_median", "state_ms_median"],
                     [list(point) for point in self.store.history],
                     notes=[_("One row per run in this visit; ms: the median wall-clock time per token.")])

    def table_calculator(self):
        calculator = self.session.stores.get(self.slug + "/calculator")
        rows, settings = [], ""
        if calculator is not None and calculator.memory is not None:
            rows = [list(calculator.memory)]
            settings = ", ".join(f"{k}={serialize(getattr(calculator, n))}" for n, k in calculator.URL.items())
        return Table("calculator", _(self.TABLES["calculator"]),
                     ["context_tokens", "kv_cache_bytes", "state_bytes", "weights_bytes"], rows,
                     notes=[_("The calculator's settings: {settings}").format(settings=settings)])


# ----------------------------------------------------------------------------- the pages of one picture

def _long(rows, where, matrix):
    """Rows (…where, row, col, value) of a matrix, for a table in long form."""
    return rows + [[*where, r, c, value] for (r, c), value in np.ndenumerate(np.atleast_2d(matrix))]


class TransitionPage(PageExport):
    slug, package, title_msgid = "transition", "transition", "The transition knob"
    TABLES = {"recall": N_("What each answer matches"), "memory": N_("Memory S at the end"),
              "transition": N_("Transition")}

    def _models(self):
        """[(name, memory, limit, recall)]: the knob, then the three small multiples, as the page draws them."""
        store, sequence = self.store, self.store.sequence
        models = [(_("The knob"), store.knob.state, sequence.limit, store.knob.recall)]
        for comparison in store.compared:
            limit = max(float(np.abs(comparison.memory).max()), 1e-6) if comparison.variant == "softmax" \
                else sequence.limit
            models.append((_(REGISTRY[comparison.variant].label), comparison.memory, limit, comparison.recall))
        return models

    def scene(self, t):
        from app.dashboards.transition.pictures import answers_html

        store, sequence = self.store, self.store.sequence
        recall = store.knob.recall
        token = sequence.tokens[sequence.shown_at].text
        panels = [Heat(_("Transition at {token}").format(token=token), store.knob.transition, 1.0,
                       _("to key dimension"), _("from key dimension"))]
        for i, (name, memory, limit, _recall) in enumerate(self._models()):
            softmax = i > 0 and store.compared[i - 1].variant == "softmax"
            title = (_("{name}: value cache") if softmax else _("{name}: memory S")).format(name=name)
            panels.append(Heat(title, memory, limit, _("value dimension") if softmax else _("key dimension"),
                               _("position in the sequence") if softmax else _("value dimension")))
        panels.insert(2, Heat(_("What each answer matches"), _cosines(recall), 1.0, _("stored number"),
                              row_labels=[q.token.text for q in recall.questions] or [""],
                              col_labels=list(recall.candidates) or None))
        caption = [plain(answers_html(recall))[0], _("Gate: {gate} · α = {alpha} · β = {beta}").format(
            gate=store.gate, alpha=format_number(store.alpha, 2), beta=format_number(store.beta, 2))]
        return Scene(self.title(), panels, caption=caption, footer=self.footer())

    def table_recall(self):
        rows = []
        for name, _memory, _limit, recall in self._models():
            for q in recall.questions:
                rows.append([name, q.position + 1, q.token.text, q.expected, q.answer, q.right,
                             *(float(c) for c in q.cosines)])
        candidates = self.store.knob.recall.candidates
        return Table("recall", _(self.TABLES["recall"]),
                     ["model", "step", "question", "expected", "answer", "right", *(f"cos_{c}" for c in candidates)],
                     rows, notes=[_("cos_…: the cosine of the question's read-out with each stored number "
                                    "(the largest is the answer).")])

    def table_memory(self):
        rows = []
        for name, memory, _limit, _recall in self._models():
            rows = _long(rows, [name], memory)
        return Table("memory", _(self.TABLES["memory"]), ["model", "row", "col", "value"], rows,
                     notes=[_("value: the memory after the last token, no unit (softmax: its value cache, one "
                              "row per token).")])

    def table_transition(self):
        sequence = self.store.sequence
        return Table("transition", _(self.TABLES["transition"]), ["row", "col", "value"],
                     _long([], [], self.store.knob.transition),
                     notes=[_("Transition at {token}").format(token=sequence.tokens[sequence.shown_at].text)])


def _cosines(recall):
    return np.array([q.cosines for q in recall.questions]) if recall.questions else np.zeros((1, 1))


class MemoryFailsPage(PageExport):
    slug, package, title_msgid = "memory-fails", "memory_fails", "Where memory fails"
    TABLES = {"curve": N_("Recall error"), "queries": N_("Every query"),
              "query_parts": N_("One query: what each stored pair puts in"),
              "trained": N_("The trained models, query by query"), "held_out": N_("Right, over held-out examples"),
              "forensics": N_("One trained answer taken apart"), "map": N_("Answers right, for every d_k")}

    def scene(self, t):
        from app.components.curves import ORANGE
        from app.dashboards.memory_fails.model import RULE_NAMES

        store, curve = self.store, self.store.curve
        N, top = curve["pairs"], float(curve["pairs"].max())
        errors = Curves(_("Recall error"), [
            Series(_("the best of any linear read-out (one-hot values)"), N, curve["bound"], "#1f2933", dash=True),
            Series(_("the best read-out of these keys"), N, curve["best"], BLUE, kind="dots", size=9, marker="square"),
            Series(_("this memory's read-out"), N, curve["error"], VERMILLION),
            Series("", N, curve["error"], VERMILLION, kind="dots")],
            (0, top * 1.03), (0, max(1.0, float(curve["error"].max()) * 1.08)),
            _("number of stored pairs N"), _("error per query"))
        accuracy = Curves(_("Answers right"), [
            Series(_("answers right (closest stored value)"), N, curve["accuracy"], ORANGE),
            Series("", N, curve["accuracy"], ORANGE, kind="dots", size=9)],
            (0, top * 1.03), (0, 1.05), _("number of stored pairs N"), "")
        caption = [f"{_(RULE_NAMES[store.rule])} · d_k = {store.d_k}"]
        return Scene(self.title(), [errors, accuracy], caption=caption, footer=self.footer())

    def table_curve(self):
        curve = self.store.curve
        names = ["pairs", "error", "best", "accuracy", "bound"]
        return Table("curve", _(self.TABLES["curve"]), names, np.column_stack([curve[n] for n in names]).tolist(),
                     notes=[_("error: ½‖read-out − one-hot value‖² per query, no unit; best: the same for the "
                              "least-squares read-out of the same keys; bound: ½·max(0, 1 − d_k/N); accuracy: "
                              "the share of queries whose nearest stored value is right (dense values). Each "
                              "point is the mean of two draws of the keys.")])

    def table_queries(self):
        run = self.store.run
        rows = [[i + 1, int(run.targets[i]) + 1, int(run.answers[i]) + 1, bool(run.right[i])]
                for i in range(len(run.targets))]
        return Table("queries", _(self.TABLES["queries"]), ["query", "right_write", "answered_write", "right"], rows,
                     notes=[_("{pairs} pairs: each key read back; writes are numbered from 1.").format(
                         pairs=self.store.pairs)])

    def table_query_parts(self):
        from app.dashboards.memory_fails.model import decomposition

        run, q = self.store.run, self.store.query - 1
        weights, _contributions = decomposition(run, q)
        rows = [[i + 1, float(w), i == run.targets[q], i == run.answers[q]] for i, w in enumerate(weights)]
        return Table("query_parts", _(self.TABLES["query_parts"]), ["write", "weight", "right_pair", "answered"], rows,
                     notes=[_("Query {q}: the read-out is the sum of weight × value over the writes (the bars of "
                              "the page).").format(q=q + 1)])

    def table_trained(self):
        example = self.store.trained
        rows = [[variant, i + 1, int(example.tokens[position]), int(want), int(got), bool(want == got)]
                for variant, predicted in example.predicted.items()
                for i, (position, want, got) in enumerate(zip(example.positions, example.expected, predicted))]
        return Table("trained", _(self.TABLES["trained"]), ["model", "query", "key_id", "right_value_id",
                                                             "answered_value_id", "right"], rows,
                     notes=[_("Example {e} of the task {task}; ids are the tokens' numbers.").format(
                         e=self.store.example, task=self.store.task)])

    def table_held_out(self):
        from app.dashboards.memory_fails.model import ACCURACY_EXAMPLES

        accuracy = self.store.accuracy
        return Table("held_out", _(self.TABLES["held_out"]), ["model", "share_right"],
                     [[variant, float(share)] for variant, share in accuracy.items()],
                     notes=[_("Share of the queries answered right over {n} held-out examples (empty until "
                              "counted).").format(n=ACCURACY_EXAMPLES)])

    def table_forensics(self):
        from app.dashboards.memory_fails.model import query_forensics

        store = self.store              # the page's answer (cached: computed once for the page and the file)
        found = query_forensics(store.probe, store.task, store.example, store.probe_query)
        rows = []
        for layer, parts in enumerate(found.layers):
            for i, (share, size, kept, similarity) in enumerate(zip(parts.share, parts.size, parts.kept,
                                                                    parts.similarity)):
                rows.append([layer + 1, i, int(found.tokens[i]), i in found.right, float(share), float(size),
                             float(kept), float(similarity)])
        verdicts = ", ".join(f"{layer + 1}: {v.kind}" for layer, v in enumerate(found.verdicts))
        return Table("forensics", _(self.TABLES["forensics"]),
                     ["layer", "position", "token_id", "right_pair", "share", "size", "let_through", "key_similarity"],
                     rows, notes=[_("{model}, query {q} at position {at}: right value {right}, answered {answer}; "
                                    "verdict per layer: {verdicts}.").format(
                                        model=found.variant, q=found.query, at=found.position, right=found.expected,
                                        answer=found.answer, verdicts=verdicts),
                                  _("share: the write's term along the layer's read-out, c·o/|o|² (the shares add "
                                    "up to 1); size: |c|; let_through: the share of the query the later transitions "
                                    "let through (mLSTM: the forget gates' product; softmax: 1); key_similarity: "
                                    "cosine of the write's key and the query.")])

    def table_map(self):
        from app.dashboards.memory_fails.model import accuracy_map

        store = self.store              # the page's map (cached: computed once for the page and the file)
        found = accuracy_map(*(getattr(store, name) for name in store.MAP_SETTINGS))
        rows = [[store.rule, int(d_k), int(N), float(right)]
                for d_k, pairs, accuracy in zip(found["d_k"], found["pairs"], found["accuracy"])
                for N, right in zip(pairs, accuracy)]
        return Table("map", _(self.TABLES["map"]), ["rule", "d_k", "pairs", "accuracy"], rows,
                     notes=[_("accuracy: the share of queries whose nearest stored value (cosine) is right, dense "
                              "values, mean of two draws of the keys; α = {alpha} (gated delta rule), β = {beta} "
                              "(delta rules).").format(alpha=format_number(store.alpha),
                                                       beta=format_number(store.beta))])


class ParallelRecurrentPage(PageExport):
    slug, package, title_msgid = "parallel-recurrent", "parallel_recurrent", "Parallel = recurrent"
    TABLES = {"outputs": N_("The three outputs"), "errors": N_("How far apart the three answers are"),
              "mask": N_("Decay mask L of the parallel form"), "cost": N_("Measured cost of the three forms")}

    def scene(self, t):
        comparison = self.store.comparison
        titles = {"recurrent": _("Recurrent: token by token"), "parallel": _("Parallel: all at once"),
                  "chunked": _("Chunked: blocks of {size}").format(size=comparison.chunk_size)}
        panels = [Heat(titles[form], output.T, comparison.peak, _("position in the sequence"), _("channel"))
                  for form, output in comparison.outputs.items()]                                    # [d_v, T]
        delta = comparison.outputs["chunked"] - comparison.outputs["recurrent"]
        largest = max(float(np.abs(delta).max()), 1e-300)
        panels.append(Heat(_("Chunked − recurrent: up to ±{limit}").format(limit=f"{largest:.1e}"), delta.T,
                           largest, _("position in the sequence"), _("channel")))
        caption = [f"{_(REGISTRY[comparison.variant].label)} · T = {comparison.length}"]
        return Scene(self.title(), panels, caption=caption, footer=self.footer())

    def table_outputs(self):
        rows = []
        for form, output in self.store.comparison.outputs.items():
            rows = _long(rows, [form], output)
        return Table("outputs", _(self.TABLES["outputs"]), ["form", "token", "channel", "value"], rows,
                     notes=[_("value: the output o_t of one head in float32, no unit; token from 0.")])

    def table_errors(self):
        rows = [[dtype, a, b, largest, relative]
                for (dtype, (a, b)), (largest, relative) in self.store.comparison.errors.items()]
        return Table("errors", _(self.TABLES["errors"]), ["dtype", "form_a", "form_b", "largest_abs", "relative_rms"],
                     rows, notes=[_("largest_abs: the largest |a − b|; relative_rms: ‖a − b‖ / ‖a‖ (root mean "
                                    "squares).")])

    def table_mask(self):
        return Table("mask", _(self.TABLES["mask"]), ["t", "j", "L"], _long([], [], self.store.mask),
                     notes=[_("L[t, j]: how much token j counts at token t (empty: j after t).")])

    def table_cost(self):
        curve = self.store.curve
        rows = []
        if curve is not None:
            for form, points in curve.times.items():
                wall = dict(curve.wall.get(form, []))
                rows += [[form, T, 1000 * seconds, 1000 * wall.get(T, float("nan"))] for T, seconds in points]
        return Table("cost", _(self.TABLES["cost"]), ["form", "T", "cpu_ms", "wall_ms"], rows,
                     notes=[_("Measured on the machine that made this file (empty: not measured yet).")])


# ----------------------------------------------------------------------------- Architectures

class ArchitecturesPage(PageExport):
    slug, package, title_msgid = "architectures", "architectures", "Architectures"
    TABLES = {"forgetting": N_("What is left of a pair"), "eigenvalues": N_("What each direction keeps per token")}

    def _models(self):
        from app.dashboards.architectures import model
        return model, [v for v in model.ARCHITECTURES if REGISTRY[v].fixed_state]

    def scene(self, t):
        from app.dashboards.architectures.pictures import COLOURS

        model, variants = self._models()
        chosen = self.store.arch
        steps = np.arange(model.TOKENS + 1)
        curves = [Series(_(REGISTRY[v].label), steps, model.forgetting_curve(v), COLOURS[v],
                         width=6.0 if v == chosen else 2.5) for v in variants]
        dots = [Series("", model.eigenvalues(v),
                       np.full(model.D, len(variants) - i, dtype=float), COLOURS[v], kind="dots",
                       size=11.0 if v == chosen else 7.0) for i, v in enumerate(variants)]
        panels = [Curves(_("What is left of a pair"), curves, (0, model.TOKENS), (-0.05, 1.05),
                         _("tokens after it was written"), _("share of the pair left")),
                  Curves(_("What each direction keeps per token"), dots, (-1.1, 1.1), (0.3, len(variants) + 0.7),
                         _("factor per token"), _("row: the models, top to bottom as in the legend"))]
        caption = [_("Highlighted: {name}").format(name=_(REGISTRY[chosen].label))]
        return Scene(self.title(), panels, caption=caption, footer=self.footer())

    def table_forgetting(self):
        model, variants = self._models()
        rows = [[v, n, float(share)] for v in variants for n, share in enumerate(model.forgetting_curve(v))]
        return Table("forgetting", _(self.TABLES["forgetting"]), ["model", "tokens_after", "share_left"], rows,
                     notes=[_("share_left: the mean over {texts} random texts of k₀ᵀA₁⋯Aₙk₀, what is left of a "
                              "pair written at token 0 (1: all of it).").format(texts=model.TEXTS)])

    def table_eigenvalues(self):
        model, variants = self._models()
        rows = [[v, 1.0, i, float(x)] for v in variants for i, x in enumerate(model.eigenvalues(v))]
        rows += [[v, model.WIDE_BETA, i, float(x)] for v in model.WIDE
                 for i, x in enumerate(model.eigenvalues(v, model.WIDE_BETA))]
        return Table("eigenvalues", _(self.TABLES["eigenvalues"]), ["model", "beta", "index", "eigenvalue"], rows,
                     notes=[_("eigenvalue: of the transition A_t at one token, real part, smallest first; no unit.")])


PAGES = {page.slug: page for page in (TwoBillsPage, StatePage, TransitionPage, MemoryFailsPage,
                                      ParallelRecurrentPage, ArchitecturesPage)}
