"""Two bills, exported (app/export): the memory bill, the work bill and the time per token, token by
token, as the page's player shows them; the run, the visit's measurements and the calculator as tables.
"""
import numpy as np

from lineare.app.components.curves import BLUE, VERMILLION
from lineare.app.export.draw import fade
from lineare.app.export.pages import PageExport
from lineare.app.export.scene import Curves, Scene, Series, Table
from lineare.app.i18n import N_, _, format_number
from lineare.app.urlstate import serialize
from lineare.app.variants import running_name


class TwoBillsPage(PageExport):
    slug, package, title_msgid = "two-bills", "two_bills", "Two bills"
    TABLES = {"tokens": N_("Generating, one token at a time"), "measurements": N_("Your measurements: time "
                                                                                  "against context"),
              "calculator": N_("Memory against context length")}
    animated = True

    @classmethod
    def open(cls, session, args):
        from lineare.app.dashboards.two_bills.calculator import CalculatorStore
        from lineare.app.urlstate import read_query

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
        from lineare.app.dashboards.two_bills.model import byte_unit

        result = self.store.result
        t = min(t, result.tokens - 1)
        name = running_name(result.variant)
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
        soft_median, state_median = result.softmax_median, result.state_median
        top = max(soft_median.max(), state_median.max())
        times = [Series("", numbers[upto], result.softmax_ms[upto], faded(VERMILLION), kind="dots"),
                 Series("", numbers[upto], result.state_ms[upto], faded(BLUE), kind="dots", marker="square"),
                 Series(_("softmax"), numbers[upto], soft_median[upto], VERMILLION, width=4),
                 Series(_("state ({model})").format(model=name), numbers[upto], state_median[upto], BLUE,
                        dash=True, width=4)]
        panels = [Curves(_("Memory held while generating"), memory,
                         (0, held[-1] + max(1, held[-1] // 50)), (0, 1.12 * cache_max / size),
                         _("tokens in memory"), _("memory ({unit})").format(unit=symbol)),
                  self._work(t),
                  Curves(_("Time per token, measured now"), times, (0, result.tokens + 1), (0, 1.6 * top),
                         _("generated token"), _("milliseconds per token"))]
        return Scene(self.title(), panels, caption=self.captions(t), step=self.step(t), footer=self.footer())

    def _work(self, t):
        """The work bill up to token t, as the page's picture counts it (pictures.WorkPicture): the multiply-adds
        one layer spends to read each token, against the tokens read. Softmax's line rises with the tokens in
        memory (the area under it is the page's triangle), the state's is flat (its strip); the dashed line is
        where softmax starts doing more per token."""
        from lineare.app.dashboards.two_bills.model import multiply_adds, work_crossing

        result = self.store.result
        H, d, c = result.heads, result.dim, result.context
        softmax, state = multiply_adds(result.held, H, d, d)
        at = work_crossing(d, d)
        held = result.held[:t + 1].astype(float)
        top = float(max(softmax[-1], state, multiply_adds([at], H, d, d)[0][0]))
        name = running_name(result.variant)
        lines = [Series(_("softmax"), held, softmax[:t + 1], VERMILLION, width=4),
                 Series(_("state ({model})").format(model=name), np.array([0.0, held[-1]]), np.array([state] * 2),
                        BLUE, dash=True, width=4),
                 Series("", held[-1:], softmax[t:t + 1], VERMILLION, kind="dots", size=12),
                 Series("", held[-1:], np.array([state]), BLUE, kind="dots", size=12, marker="square"),
                 Series(_("from token {n} softmax does more per token").format(n=at), np.array([at, at]),
                        np.array([0.0, 1.06 * top]), "#52606d", dash=True, width=2)]
        if c:                                         # the prompt's tokens, read before the first generated one
            prompt = np.arange(1, c + 1)
            lines.insert(0, Series(_("already in memory"), prompt.astype(float), multiply_adds(prompt, H, d, d)[0],
                                   "#%02x%02x%02x" % fade(VERMILLION, 0.65), width=2))
        # in thousands or millions: the picture's tick labels have room for about five digits
        scale, unit = (1e3, _("thousands of multiply-adds per token (one layer)")) if top < 1e7 else \
            (1e6, _("millions of multiply-adds per token (one layer)"))
        for line in lines:
            line.y = np.asarray(line.y, dtype=float) / scale
        end = float(max(result.held[-1], at)) * 1.02
        return Curves(_("The work bill: multiply-adds per token"), lines, (0, end), (0, 1.12 * top / scale),
                      _("tokens read"), unit)

    def captions(self, t):
        from lineare.app.dashboards.two_bills.model import format_bytes, format_ms, format_power

        result = self.store.result
        name = running_name(result.variant)
        lines = [_("Token {t} of {n} · tokens in memory: {held}").format(
            t=t + 1, n=result.tokens, held=format_number(int(result.held[t])))]
        lines.append(f"{_('KV cache (softmax)')}: {format_bytes(result.kv_cache_bytes[t])}, "
                     + _("grows by {bytes} at every token").format(bytes=format_bytes(result.bytes_per_token))
                     + f" · {_('state ({model})').format(model=name)}: {format_bytes(result.state_bytes[t])}, "
                     + _("the same at every token"))
        soft_ms, state_ms = result.softmax_median[t], result.state_median[t]
        lines.append(_("Typical time per token (median of the last 9): softmax {softmax} ms, {model} {state} ms.")
                     .format(softmax=format_ms(soft_ms), model=name, state=format_ms(state_ms)))
        softmax_work, state_work = self.work_so_far(t)
        lines.append(_("So far: softmax {softmax}, state {state}").format(softmax=format_power(softmax_work),
                                                                         state=format_power(state_work)))
        return lines

    def work_so_far(self, t):
        """(softmax, state) multiply-adds of one layer up to token t, the prompt included (the page's subtitle)."""
        from lineare.app.dashboards.two_bills.model import multiply_adds

        result = self.store.result
        H, d, c = result.heads, result.dim, result.context
        softmax, state = multiply_adds(result.held, H, d, d)
        prompt = float(multiply_adds(np.arange(1, c + 1), H, d, d)[0].sum())
        return prompt + float(softmax[:t + 1].sum()), float(state * result.held[t])

    def explanation(self):
        if self.session.level == "superiore":
            return _("Softmax attention pays two bills. **Work**: a prompt of $n$ tokens costs $O(n^2 d)$ per "
                     "layer, since every query meets every earlier key. **Memory**: to generate token $t$ it "
                     "reads a KV cache of $t$ keys and $t$ values, which grows as $O(t)$ and is never freed. A "
                     "fixed-size state $S_t \\in \\mathbb{R}^{d_v \\times d_k}$ costs $O(d_k d_v)$ per token, "
                     "in time and in memory, whatever $t$ is (Katharopoulos et al. 2020).")
        return _("Softmax attention pays two bills. **Work**: to read a text, it compares every token "
                 "with every earlier one. **Memory**: while it writes, it keeps a key and a value for every "
                 "token it has seen, and never throws any away. A model with a fixed-size state pays a "
                 "fixed amount instead. Below, one layer of each kind generates the same tokens, one at a "
                 "time; further down, the same bills for real models.")

    def table_tokens(self):
        result = self.store.result
        soft_median, state_median = result.softmax_median, result.state_median
        rows = [[t + 1, result.held[t], result.kv_cache_bytes[t], result.state_bytes[t], result.softmax_ms[t],
                 result.state_ms[t], soft_median[t], state_median[t]] for t in range(result.tokens)]
        setup = _("Softmax attention against {model}: one layer each, {heads} heads with d_k = d_v = {dim}, "
                  "numbers in float32, random tokens.").format(model=running_name(result.variant),
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


Export = TwoBillsPage
