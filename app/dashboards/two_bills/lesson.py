"""The lesson of "Two bills": where the notebook (KV cache) outgrows the summary (state), what twice the
text costs in work, which layer is slower with a long text in memory, and a real model's notebook.
Answers are read off the page's run (model.Generation) and its calculator (calculator.CalculatorStore)."""
import numpy as np

from lineare.app.cards import Card, Guess, decimal, nearest, plain
from lineare.app.i18n import N_, _, format_number

EMPTY = {"variant": "linear", "context": "0", "tokens": "64", "heads": "4", "dim": "64", "seed": "0", "t": "0"}
CROSSINGS = (3, 30, 1000)                      # card 1's choices, as numbers
WORK_RATIOS = (1, 2, 4)                        # card 2's
SIZE_RATIOS = (0.1, 1, 10)                     # card 4's: the notebook against the weights
LLAMA = {"preset": "llama3_8b", "dtype": "bf16", "n": "131072"}


def _frame_holding(result, held):
    """The player's frame at which `held` tokens are in memory (0-based; within the run)."""
    return min(max(held - result.context - 1, 0), result.tokens - 1)


def _crossing(store):
    result = store.result
    from lineare.app.dashboards.two_bills.model import format_bytes
    return dict(n=format_number(result.crossing), step=format_bytes(result.bytes_per_token),
                cache=format_bytes(int(result.kv_cache_bytes[_frame_holding(result, result.crossing)])),
                state=format_bytes(int(result.state_bytes[0])))


def _work(store):
    """Multiply-adds of the whole run and of its first half: {softmax, state} → (half, whole)."""
    from lineare.app.dashboards.two_bills.model import multiply_adds
    result = store.result
    softmax, state = multiply_adds(result.held, result.heads, result.dim, result.dim)
    half = result.tokens // 2
    return {"softmax": (int(softmax[:half].sum()), int(softmax.sum())),
            "state": (half * int(state), result.tokens * int(state)), "half": half, "whole": result.tokens}


def _ratio(pair):
    return pair[1] / pair[0]


def _work_text(store):
    work = _work(store)
    (a, b), (c, d) = work["softmax"], work["state"]
    return _("Softmax: {a} multiply-adds for the first {half} words, {b} for all {whole}, {ratio} times as "
             "much: the triangle grows on both sides. The summary: {c} and {d}, {state_ratio} times as much, "
             "a strip twice as long.").format(
        a=format_number(a), b=format_number(b), half=work["half"], whole=work["whole"],
        ratio=decimal(_ratio(work["softmax"])), c=format_number(c), d=format_number(d),
        state_ratio=decimal(_ratio(work["state"])))


def _typical(store):
    """The typical step times (ms) the page shows at frame _times_at: (softmax, state)."""
    result, t = store.result, _times_at(store)
    return float(result.softmax_median[t]), float(result.state_median[t])


def _times_at(store):
    from lineare.app.dashboards.two_bills.model import WINDOW
    return min(WINDOW, store.result.tokens) - 1          # the first frame with a full window of times


def _slower(store):
    """0: softmax is slower (by half again or more), 1: the summary is, 2: about the same."""
    softmax, state = _typical(store)
    return 0 if softmax > 1.5 * state else 1 if state > 1.5 * softmax else 2


def _times_text(store):
    from lineare.app.dashboards.two_bills.model import format_ms
    softmax, state = _typical(store)
    return _("Measured on this server just now, over the first {n} words: softmax {softmax} ms per word, the "
             "summary {state} ms. Each new question of softmax is compared with all {context} labels in the "
             "notebook; the summary does the same fixed update as ever.").format(
        n=_times_at(store) + 1, softmax=format_ms(softmax), state=format_ms(state),
        context=format_number(store.result.context))


def _calculator():
    """The calculator as card 4 opens it (the page reads the same URL arguments)."""
    from lineare.app.dashboards.two_bills.calculator import CalculatorStore
    from lineare.app.urlstate import read_query
    values, _notices = read_query(CalculatorStore, CalculatorStore.URL, {k: [v.encode()] for k, v in LLAMA.items()})
    return CalculatorStore(**values)


def _llama_text(_store):
    from lineare.app.dashboards.two_bills.model import format_bytes
    calculator = _calculator()
    return _("The notebook takes {cache}, the weights {weights}: from token {n} on, the notebook alone outweighs "
             "the whole model. A summary of the same shape would take {state}, whatever the length. Try other "
             "models in the calculator, further down the page.").format(
        cache=format_bytes(calculator.kv_cache_bytes()), weights=format_bytes(calculator.weight_bytes()),
        n=format_number(calculator.weights_crossing()), state=format_bytes(calculator.state_bytes()))


def _point(store):
    from lineare.app.dashboards.two_bills.view import POINT_PLAIN
    return plain(_(POINT_PLAIN).format(crossing=format_number(store.result.crossing)))


def _crossing_said(store):
    """The page's words for the crossing: the mark on «Memory held while generating», the line under the bills and
    the point."""
    from lineare.app.dashboards.two_bills.pictures import two_lines
    crossing = format_number(store.result.crossing)
    return [" ".join(two_lines(_("from token {n} the cache is bigger").format(n=crossing)).split()),
            _("The cache has been bigger than the state since token {n}.").format(n=crossing), _point(store)]


def _rows(store):
    """Softmax's multiply-adds for each token read (x), against the token (y): the edge of the work bill's
    triangle, one row per token."""
    from lineare.app.dashboards.two_bills.model import multiply_adds
    result = store.result
    softmax, _state = multiply_adds(result.held, result.heads, result.dim, result.dim)
    return np.asarray(softmax, dtype=float), np.asarray(result.held, dtype=float)


def _work_said(store):
    from lineare.app.dashboards.two_bills.view import WORK_PLAIN
    return [plain(_(WORK_PLAIN)), _point(store)]


def _times_said(store):
    from lineare.app.dashboards.two_bills.view import typical_html
    return [plain(typical_html(store.result, _times_at(store)))]


def _weights_said(_store):
    from lineare.app.dashboards.two_bills.model import format_bytes
    return [format_bytes(_calculator().weight_bytes())]


CARDS = (
    Card(setup=EMPTY,
         prompt=N_("Both memories start empty. At every word softmax attention adds two notes to its notebook (KV "
                   "cache); the summary (state) keeps its size. At about which token (word) does the notebook become "
                   "bigger than the summary?"),
         choices=tuple(str(n) for n in CROSSINGS),
         correct=lambda store: nearest(CROSSINGS, store.result.crossing, log=True),
         at=lambda store: _frame_holding(store.result, store.result.crossing),
         press=N_("Press ▶ Play and watch the two lines in «Memory held while generating»."),
         observe=lambda store: _("From token {n} on the notebook is bigger: {cache} against the summary's {state}. "
                                 "It grows by {step} at every word; the summary stays at {state}.").format(
             **_crossing(store)),
         hides=("point", "memory.crossing", "typical"), look=("memory",), answer=_crossing_said),
    Card(setup=EMPTY,
         prompt=N_("Softmax compares every new word with all the words before it. Reading twice as many words, "
                   "how much more work (multiply-adds) does it do in all?"),
         choices=(N_("the same"), N_("twice as much"), N_("four times as much")),
         correct=lambda store: nearest(WORK_RATIOS, _ratio(_work(store)["softmax"])),
         at=lambda store: store.result.tokens - 1, guess=Guess("work.figure", _rows, along="y"),
         press=N_("Draw on «The work bill: multiply-adds per token» how wide you expect softmax's row to be at each "
                  "token, from the top down; then press ▶ Play and watch the triangle grow under your line."),
         observe=_work_text, hides=("point", "work.text"), look=("work",), answer=_work_said),
    Card(setup={**EMPTY, "context": "512"},
         prompt=N_("Now 512 words are already in the notebook before the first new one. Which layer takes "
                   "longer to read each new word?"),
         choices=(N_("softmax attention"), N_("the summary (linear attention)"), N_("about the same")),
         correct=_slower,
         at=_times_at,
         press=N_("Press ▶ Play and read the typical times under the pictures."),
         observe=_times_text, hides=("typical",), look=("status",), answer=_times_said),
    Card(setup=LLAMA,
         prompt=N_("A real model, Llama-3.1-8B, reads a book of 131,072 words, with numbers of 2 bytes (bf16). "
                   "Compared with the model's own weights, how much room does its notebook (KV cache) take?"),
         choices=(N_("about a tenth"), N_("about as much"), N_("about ten times as much")),
         correct=lambda _store: nearest(SIZE_RATIOS, _calculator().kv_cache_bytes() / _calculator().weight_bytes(),
                                        log=True),
         observe=_llama_text, hides=("calculator.weights",), look=("calculator.results",), answer=_weights_said),
)
