"""The page of "The state fills up": the token strip, the player, and the cards of every head.

`StateView` watches a `model.StateStore` and draws it; it owns the `Player` and the per-head
`HeadPanel`s, and nothing of the data. When the run changes, every frame of it goes to the browser at
once (pictures and per-frame texts), and the player animates it there without asking the server.
"""
import functools
import html

import panel as pn

from lineare.app import mechanism
from lineare.app.components.code import CODE_CSS, source_html
from lineare.app.components.controls import example_input, mechanism_knobs, sidebar_label, sidebar_note
from lineare.app.components.later import SectionPart
from lineare.app.components.player import FrameText, Player
from lineare.app.components.text import TEXT_CSS, Explanation, Explanations, point_box
from lineare.app.dashboards.base import DashboardView, title
from lineare.app.dashboards.state_fills_up.model import MECHANISM_PAIRS, MechanismBounds, StateStore, head_frame
from lineare.app.dashboards.state_fills_up.pictures import HeadPanel
from lineare.app.dashboards.state_fills_up.texts import (ANSWER_CSS, CAPTION_CSS, GAUGE_CSS, STRIP_CSS,
                                                         TRAINED_STRIP_FORMULA, TRAINED_STRIP_PLAIN, about_checkpoint,
                                                         failure_message, memory_line, prediction_html,
                                                         problem_messages, readout_html, step_caption, token_strip,
                                                         trained_memory_line, trained_strip)
from lineare.app.i18n import _, current_language
from lineare.app.urlstate import read_query
from lineare.app.variants import REGISTRY, label
from lineare.engine.ops.recurrent import STEPS

NOTEBOOK_URL = "./notebooks/parallel_equals_recurrent.ipynb"       # served by python -m lineare.app (app/serve.py)


def code_html(variant):
    """The engine's step function of `variant`, and where the forms are proved equal, folded away."""
    return _code_html(variant, current_language())


@functools.lru_cache(maxsize=64)
def _code_html(variant, language):              # highlighting takes ~7 ms: once per process and language
    where, code = source_html(STEPS[variant])
    summary = html.escape(_("From the pictures to the code: {function}").format(function=f"step_{variant}"))
    about = html.escape(_("Every picture above comes from this function, run one token at a time ({where}). "
                          "The notebook {notebook} checks, with NumPy alone, that the parallel and chunked forms "
                          "give the same numbers.")).format(
        where=f"<code>{html.escape(where)}</code>",
        notebook=f'<a href="{NOTEBOOK_URL}" download>parallel_equals_recurrent.ipynb</a>')
    return f"<details><summary>{summary}</summary><p>{about}</p>{code}</details>"


def read_store_query(args):
    """The store's values from the URL, with notices; mechanism mode's MQAR keeps to 8 pairs."""
    values, notices = read_query(StateStore, {n: k for n, k in StateStore.URL.items() if n != "pairs"}, args)
    bounds = StateStore if values.get("mode") == "trained" else MechanismBounds
    pairs, more = read_query(bounds, {"pairs": "pairs"}, args)
    return {**values, **pairs}, notices + more


class StateView(DashboardView):
    """Draws a StateStore; owns the player and the per-head pictures, and nothing of the data."""

    Store = StateStore
    slug = "state"

    @classmethod
    def open_store(cls, session, args):
        values, notices = read_store_query(args)
        store = session.store(cls.slug, lambda: StateStore(**values))
        session.add_notices("url", notices)
        return store

    def __init__(self, **params):
        super().__init__(**params)
        store, session = self.store, self.session
        self.player, player_notices = Player.from_query(pn.state.session_args)
        length = store.length()
        if self.player.value > length - 1 and not (store.mode == "trained" and store.failure):
            player_notices.append(_("The link asked for step {t}, but this sequence has {n} steps: the last "
                                    "one is shown.").format(t=self.player.value + 1, n=length))
        self.player.length = length
        session.add_notices("url", player_notices)

        self.rule = Explanation(session, sizing_mode="stretch_width")
        self.about = Explanation(session, sizing_mode="stretch_width")          # trained mode: the checkpoint
        self.strip = FrameText(stylesheets=[STRIP_CSS], sizing_mode="stretch_width", margin=(4, 10))
        self.memory = FrameText(stylesheets=[TEXT_CSS, GAUGE_CSS], margin=(0, 10), sizing_mode="stretch_width")
        self.caption = FrameText(stylesheets=[CAPTION_CSS], margin=(2, 10), sizing_mode="stretch_width")
        self.prediction = FrameText(stylesheets=[ANSWER_CSS], margin=(4, 10), sizing_mode="stretch_width")
        self.strip_help = Explanation(session, sizing_mode="stretch_width")
        self.left_out = Explanation(session, sizing_mode="stretch_width")
        self.code = pn.pane.HTML(stylesheets=[CODE_CSS], sizing_mode="stretch_width", margin=(4, 10))
        # a head's pictures and title are made when it is first shown (most visitors see one head)
        self.heads, self.head_titles = [], []
        self.mechanism_area = pn.Column(sizing_mode="stretch_width", margin=0)
        self.layer_panels = {}                                  # trained mode: (layer, head) → HeadPanel
        self.shown_panels = []                                  # trained mode: (layer, HeadPanel) on the page
        self.trained_area = pn.Column(sizing_mode="stretch_width", margin=0)
        store.param.watch(self._reconfigure, ["mode", "layer", "result", "problems", "trained", "failure"])
        self._reconfigure()

    def controls(self):
        store = self.store
        mode = pn.widgets.RadioButtonGroup.from_param(
            store.param.mode, name=_("Mode"), sizing_mode="stretch_width", color="primary",
            variant="outline", options={_("Mechanism"): "mechanism", _("Trained model"): "trained"})
        variant = pn.widgets.Select.from_param(
            store.param.variant, name=_("Model"), sizing_mode="stretch_width",
            options={label(v): v for v in REGISTRY})
        layer = pn.widgets.RadioButtonGroup.from_param(
            store.param.layer, name=_("Layer"), sizing_mode="stretch_width", color="primary",
            variant="outline", options={_("Both"): "both", "1": "1", "2": "2"})
        source = pn.widgets.RadioButtonGroup.from_param(
            store.param.source, name=_("Sequence"), sizing_mode="stretch_width", color="primary",
            variant="outline",
            options={_("Preset"): "preset", _("MQAR"): "mqar", _("Typed"): "typed"})
        # the button stays short enough for a phone; the line under it says what the acronym is
        mqar_note = sidebar_note(_("MQAR (multi-query associative recall): first the pairs name:number, then each "
                                   "name comes back as a question."))
        preset = pn.widgets.Select.from_param(
            store.param.preset, name=_("Preset"), sizing_mode="stretch_width",
            options={_(mechanism.PRESET_NAMES[p]): p for p in mechanism.PRESETS})
        pairs = pn.widgets.IntSlider.from_param(store.param.pairs, name=_("Pairs"), sizing_mode="stretch_width",
                                                throttled=True)           # a new run when released
        example = example_input(store, _("Example number"))                 # counted from 1, the URL from 0
        text = pn.widgets.TextAreaInput.from_param(
            store.param.text, name=_("Your tokens (name:number, name?, ·)"), max_length=mechanism.MAX_CHARS,
            sizing_mode="stretch_width", height=90)
        keys = pn.widgets.RadioButtonGroup.from_param(
            store.param.keys, name=_("Keys"), sizing_mode="stretch_width", color="primary",
            variant="outline", options={_("One column per name"): "perpendicular", _("Random"): "random"})
        heads = pn.widgets.RadioButtonGroup.from_param(
            store.param.heads, name=_("Heads"), options={"1": 1, "2": 2, "4": 4}, color="primary",
            variant="outline", sizing_mode="stretch_width")
        alpha, beta, seed = mechanism_knobs(store)
        mode_label, layer_label = sidebar_label(_("Mode")), sidebar_label(_("Layer"))
        source_label, heads_label = sidebar_label(_("Sequence")), sidebar_label(_("Heads"))
        keys_label = sidebar_label(_("Keys"))

        def show(*_events):
            trained = store.mode == "trained"
            for widget in (source_label, source, mqar_note, heads_label, heads, keys_label, keys):
                widget.visible = not trained
            seed.visible = not trained and (store.keys == "random" or heads.value > 1)
            layer_label.visible = layer.visible = trained
            preset.visible = not trained and store.source == "preset"
            pairs.visible = example.visible = trained or store.source == "mqar"
            pairs.end = store.param.pairs.bounds[1] if trained else MECHANISM_PAIRS
            text.visible = not trained and store.source == "typed"
            alpha.visible = not trained and REGISTRY[store.variant].forgets
            beta.visible = not trained and REGISTRY[store.variant].corrects

        store.param.watch(show, ["mode", "source", "variant", "keys", "heads"])
        show()
        return [mode_label, mode, variant, layer_label, layer, source_label, source, mqar_note, preset, pairs, example,
                text, keys_label, keys, heads_label, heads, alpha, beta, seed]

    def parts(self):
        head = self.heads[0] if self.heads else None
        removed = SectionPart(head.rest, lambda _row: [head.cards["removed"]]) if head and head.rest else []
        return {"rule": [self.rule], "player": [self.player], "strip": [self.strip], "caption": [self.caption],
                "memory": [self.memory], "readout": [head.answer] if head else [], "removed": removed}

    def __panel__(self):
        # the point first: what the token does, then the memory and its answer; how to read it below
        return pn.Column(title(_("The state fills up")), self.rule, self.strip, point_box(self.caption), self.player,
                         self.prediction, self.memory, self.mechanism_area, self.trained_area,
                         Explanations(self.strip_help, self.left_out), self.code,
                         self.about, sizing_mode="stretch_width")

    def _reconfigure(self, *_events):
        trained = self.store.mode == "trained"
        with pn.io.hold():
            self.mechanism_area.visible = not trained
            self.trained_area.visible = self.about.visible = self.prediction.visible = trained
            self.caption.visible = not trained
            self.session.notify("checkpoint", [failure_message(self.store.failure)]
                                if trained and self.store.failure else [])
            if trained:
                self._configure_trained()
            else:
                self._configure_mechanism()
            self.player.length = self.store.length()
            self._send_run()

    def _describe(self, variant):
        record = REGISTRY[variant]
        name = _(record.label)
        self.rule.elementare = f"**{name}.** " + _(record.rule)
        self.rule.superiore = f"**{name}** ({record.papers}). " + _(record.rule) + "\n\n" + record.formula
        self.left_out.superiore = _(record.left_out)          # under the pictures: the point comes first
        self.code.object = code_html(variant)

    def _configure_mechanism(self):
        store, result = self.store, self.store.result
        self.session.notify("input", problem_messages(store.problems) if store.source == "typed" else [])
        self._describe(result.variant)
        plain = _(
            "Each box is one word. **name:number** stores a number (the information) under a name (its "
            "label), **name?** asks the question, **·** waits. The highlighted box is the current word; under "
            "each question, the summary's answer (✓ right, ✗ wrong).")
        if store.keys == "perpendicular":
            plain += " " + _(
                "Each name gets a column of the summary to itself. There are 16 columns: the 17th name has "
                "to share one, and the gauge shows it red and striped.")
        self.strip_help.elementare = plain            # once: each change redraws the text
        keys = _("Keys here are perpendicular: the $i$-th name gets the basis vector $e_i$ of $\\mathbb{R}^{16}$, "
                 "so 16 names fit without interfering and the 17th has to reuse $e_1$.") \
            if store.keys == "perpendicular" else \
            _("Keys are random unit vectors here: two names always overlap a little, and that overlap is "
              "the cross-talk of the read-out.")
        self.strip_help.superiore = _(
            "One box per token $t$. A write token sets $k_t, v_t$ to the unit vectors of its name and "
            "number ($d_k = d_v = 16$) and $q_t = k_t$; a question sets only $q_t$; a wait token sets "
            "nothing, so only the transition acts.") + " " + keys
        while len(self.heads) < store.heads:
            self.heads.append(HeadPanel(len(self.heads), self.session, explain=not self.heads, player=self.player))
            self.head_titles.append(pn.pane.HTML(margin=(10, 10, 0, 10), stylesheets=[":host { font-size: 20px; }"]))
        areas = [x for pair in zip(self.head_titles, [p.layout for p in self.heads]) for x in pair]
        if self.mechanism_area.objects != areas:
            self.mechanism_area.objects = areas
        for h, panel in enumerate(self.heads):
            shown = h < store.heads
            panel.layout.visible = self.head_titles[h].visible = shown
            self.head_titles[h].object = "<b>%s</b>" % html.escape(_("Head {n}").format(n=h + 1))
            if shown:
                panel.configure(result.variant, len(result.records))
        self.head_titles[0].visible = store.heads > 1

    def _configure_trained(self):
        store, run = self.store, self.store.trained
        self.session.notify("input", [])
        self._describe(store.variant)
        self.strip_help.elementare = _(TRAINED_STRIP_PLAIN)
        self.strip_help.superiore = _(TRAINED_STRIP_FORMULA)
        if run is None:                                         # no checkpoint: the notice says why
            self.about.elementare = self.about.superiore = ""
            self.trained_area.objects, self.shown_panels = [], []
            return
        self.about.elementare, self.about.superiore = about_checkpoint(run)
        config = run.sidecar["config"]
        shown = [l for l in range(config["n_layers"]) if store.layer in ("both", str(l + 1))] or [0]
        objects, self.shown_panels = [], []
        for l in shown:
            layer_title = _("Layer {n}").format(n=l + 1)
            objects.append(pn.pane.HTML("<b>%s</b>" % html.escape(layer_title), margin=(10, 10, 0, 10),
                                        stylesheets=[":host { font-size: 20px; }"]))
            for h in range(config["n_heads"]):
                name = layer_title if config["n_heads"] == 1 else \
                    _("Layer {n}, head {h}").format(n=l + 1, h=h + 1)
                panel = self.layer_panels.get((l, h))
                if panel is None or (panel.d_k, panel.d_v) != (config["d_k"], config["d_v"]):
                    panel = self.layer_panels[l, h] = HeadPanel(h, self.session, explain=True, name=name,
                                                                d_k=config["d_k"], d_v=config["d_v"],
                                                                player=self.player)
                panel.configure(run.variant, len(run.inputs))
                panel.show_notes(not self.shown_panels)         # explanations under the first panel only
                objects.append(panel.layout)
                self.shown_panels.append((l, panel))
        self.trained_area.objects = objects

    def _send_run(self):
        """Every frame of the current run to the browser, then tell the player a new run is there."""
        store = self.store
        length = store.length()
        t = self.player.frame()
        steps = range(length)
        if store.mode == "trained":
            run = self.store.trained
            if run is None:
                for text in (self.strip, self.memory, self.prediction):
                    text.show([""])
            else:
                self.strip.show([""] * length, html=trained_strip(run), t=t)
                self.memory.show([trained_memory_line(run, i) for i in steps], t=t)
                self.prediction.show([prediction_html(run, i) for i in steps], t=t)
                for l, panel in self.shown_panels:
                    panel.show_run([head_frame(run.variant, run.layers[l], panel.head, i) for i in steps],
                                   run.limits[l], t)
        else:
            result = store.result
            # the run may be shared by other visitors (mechanism.shared_run): so are its texts and frames
            texts = result.derived(("state page texts", current_language()), lambda: {
                "strip": token_strip(result),
                "captions": ["<p>%s</p>" % html.escape(step_caption(result, i)) for i in steps],
                "memory": [memory_line(result, i) for i in steps],
                "answers": [readout_html(result, i) for i in steps]})
            self.strip.show([""] * length, html=texts["strip"], t=t)
            self.caption.show(texts["captions"], t=t)
            self.memory.show(texts["memory"], t=t)
            for h in range(store.heads):
                frames = result.derived(("head frames", h), lambda: [head_frame(result.variant, result.records,
                                                                                h, i) for i in steps])
                self.heads[h].show_run(frames, store.limits, t)
            self.heads[0].answer.show(texts["answers"], t=t)
        self.player.new_run(length)


build = StateView.build
