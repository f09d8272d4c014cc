"""The lesson of "Take away the softmax": the table of who looks at whom, the same answers from a small
summary once the softmax is gone, a summary that keeps its size, and the two orders' work on a long and
on a short text. Answers are read off the page's store (model.SoftmaxStore: its run and its counts)."""
import numpy as np

from lineare.app.cards import Card, Guess, nearest, plain
from lineare.app.i18n import N_, _, format_number

SENTENCE = {"attention": "softmax", "t": "0"}
LINEAR = {"attention": "linear", "t": "0"}
CELL_CHOICES = (8, 36, 64)
SAME = (N_("exactly the same, up to rounding"), N_("close, but different"), N_("quite different"))
SIZE = (N_("it grows by one row per word"), N_("it keeps its size"), N_("it shrinks"))
CHEAPER = (N_("the table first"), N_("the summary first"), N_("the same"))


def _cells(store):
    """The shares the table holds (its cells that are not the masked future)."""
    return int(np.count_nonzero(~np.isnan(store.run.weights)))


def _cells_text(store):
    T = store.run.length
    return _("{cells} shares: word t looks at t words (1 + 2 + … + {T}); the other {masked} cells are later "
             "words, never looked at. Every new word adds a row as long as the text so far.").format(
        cells=_cells(store), T=T, masked=T * T - _cells(store))


def _gap(store):
    return max(store.run.gap(t) for t in range(store.run.length))


def _same(store):
    gap = _gap(store)
    return 0 if gap < 1e-9 else 1 if gap < 0.1 else 2


def _same_text(store):
    from lineare.app.dashboards.take_away_softmax.texts import scientific
    return _("The same at every word: the two answers never differ by more than {gap}, a rounding in the last "
             "digits. Without the softmax the same product can be computed in another order: first the "
             "summary, then the question.").format(gap=scientific(_gap(store)))


def _size(store):
    """0: the summary grows, 1: it keeps its size, 2: it shrinks (its numbers after the first and last word)."""
    first, last = (store.run.states[t].size + store.run.sums[t].size for t in (0, store.run.length - 1))
    return 0 if last > first else 2 if last < first else 1


def _size_text(store):
    run = store.run
    T, d = run.length, run.q.shape[1]
    return _("It keeps its size: {numbers} numbers after word 1 and after word {T} ({d} × {d}, plus one row). "
             "The notebook of the softmax held {notes} numbers by word {T}, and it takes a row more for every "
             "new word.").format(numbers=run.states[-1].size + run.sums[-1].size, T=T, d=d, notes=2 * d * T)


def _caption(store, t):
    """The line under the player at word t (the page's own, at level Elementare)."""
    from lineare.app.dashboards.take_away_softmax.texts import captions
    from lineare.app.dashboards.take_away_softmax.view import sentence_words
    return plain(captions(store.run, sentence_words(), superiore=False)[t])


def _same_said(store):
    """What the page says once the second word is reached: its line, and the point that the answers agree."""
    from lineare.app.dashboards.take_away_softmax.texts import POINT
    return [_caption(store, 1), plain(_(POINT["linear", "elementare"]))]


def _size_said(store):
    """The words under the summary's picture, the page's point, and the trade-off (a memory that never grows)."""
    from lineare.app.dashboards.take_away_softmax.texts import MEMORY_HELP, POINT, TRADE_OFF
    return [plain(_(MEMORY_HELP["linear", "elementare"])), plain(_(POINT["linear", "elementare"])),
            plain(_(TRADE_OFF["elementare"]))]


def _table_curve(store):
    """The table-first order's multiply-adds at each length of the cost picture."""
    from lineare.app.dashboards.take_away_softmax.model import LENGTHS, cost_curves
    return np.array(LENGTHS, dtype=float), np.asarray(cost_curves(store.dim)["parallel"], dtype=float)


# cards 4 and 5: the table-first line, its dot and its count wait for the student's sketch of it
COST = dict(guess=Guess("cost.figure", _table_curve), look=("cost",),
            press=N_("Draw on «Work for T words» how the table-first work grows with the length T (the summary-first "
                     "line is drawn), then press «Show the real line»."),
            hides=("cost.table", "counts", "cost_help"),
            answer=lambda store: [format_number(store.counts["parallel"])])


def _cheaper(store):
    parallel, recurrent = store.counts["parallel"], store.counts["recurrent"]
    return 2 if parallel == recurrent else 1 if recurrent < parallel else 0


def _cost_text(store):
    parallel, recurrent = store.counts["parallel"], store.counts["recurrent"]
    fields = dict(parallel=format_number(parallel), recurrent=format_number(recurrent),
                  T=format_number(store.length), d=store.dim,
                  times=format_number(max(parallel, recurrent) // min(parallel, recurrent)))
    counts = _("The table first: {parallel} multiplications; the summary first: {recurrent}.").format(**fields)
    verdict = (_("The table grows with the square of the length, the summary with the length: with {T} words "
                 "and labels of {d} numbers, the summary first does {times} times less work.") if recurrent < parallel
               else _("With fewer words ({T}) than numbers in a label ({d}), the table first does {times} times "
                      "less work.") if parallel < recurrent
               else _("With as many words as numbers in a label, the two orders do the same work."))
    return counts + " " + verdict.format(**fields)


CARDS = (
    Card(setup=SENTENCE,
         prompt=N_("With the softmax every word looks at itself and at every word before it, giving each a "
                   "share. For these 8 words, how many shares does the table hold?"),
         choices=tuple(str(n) for n in CELL_CHOICES),
         correct=lambda store: nearest(CELL_CHOICES, _cells(store)), observe=_cells_text,
         hides=("table.cells",), look=("table",), answer=lambda store: []),       # the cells are drawn at the choice
    Card(setup=LINEAR,
         prompt=N_("Now the softmax is gone (φ = elu + 1). Word by word, each answer is also computed from a small "
                   "summary (state), without the table. Is it the same answer as the table's?"),
         choices=SAME, correct=_same, at=lambda store: 1,
         press=N_("Press ▶ Play and read the line under the player at every word."), observe=_same_text,
         hides=("point", "caption"), look=("player",), answer=_same_said),
    Card(setup=LINEAR,
         prompt=N_("While the 8 words go by, what does the summary (state) do?"),
         choices=SIZE, correct=_size, at=lambda store: store.run.length - 1,
         press=N_("Press ▶ Play and watch the picture «Summary: S and z»."), observe=_size_text,
         hides=("point", "memory_help", "trade_off"), look=("memory",), answer=_size_said),
    Card(setup={**SENTENCE, "T": "1024", "d": "64"},
         prompt=N_("A text of 1,024 words, with labels of 64 numbers. Which order does less work: the table first "
                   "(who looks at whom), or the summary first?"),
         choices=CHEAPER, correct=_cheaper, observe=_cost_text, **COST),
    Card(setup={**SENTENCE, "T": "32", "d": "256"},
         prompt=N_("Now a short text of 32 words, with labels of 256 numbers. Which order does less work now?"),
         choices=CHEAPER, correct=_cheaper, observe=_cost_text, **COST),
)
