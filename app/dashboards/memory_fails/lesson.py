"""The lesson of "Where memory fails": the bound is zero up to d_k pairs, random labels leak long before,
perpendicular ones do not, and a changed number muddles the sum rule but not the delta rule. Answers
are read off the page's store (model.MemoryStore: its capacity curve and its query-by-query run)."""
import numpy as np

from lineare.app.cards import Card, Guess, decimal, nearest, percent
from lineare.app.i18n import N_, _

SETTINGS = {"rule": "sum", "dk": "16", "keys": "random", "rewrites": "0", "pairs": "24", "query": "1", "seed": "0"}
PERPENDICULAR = {**SETTINGS, "keys": "orthogonal", "pairs": "16"}
CHANGED = {**PERPENDICULAR, "rewrites": "8"}
BOUND_CHOICES = (8, 16, 32, 64)
HOW_MANY = (N_("every one"), N_("some, not all"), N_("none of them"))


def _bound_zero(store):
    """The most pairs for which the dashed line (the bound) is still zero."""
    curve = store.curve
    return int(curve["pairs"][curve["bound"] <= 0].max())


def _bound_text(store):
    curve = store.curve
    return _("The dashed line stays at zero up to {n} pairs, as many as a label has numbers, then rises: with "
             "{top} pairs even the best read-out is off by {error}.").format(
        n=_bound_zero(store), top=int(curve["pairs"][-1]), error=decimal(curve["bound"][-1], 2))


def _few(store):
    """(pairs, error) of the curve's first point past a single pair: a few pairs, far below d_k."""
    curve = store.curve
    i = int(np.argmax(curve["pairs"] > 1))
    return int(curve["pairs"][i]), float(curve["error"][i])


def _leaks_text(store):
    pairs, error = _few(store)
    at = int(np.argmin(np.abs(store.curve["pairs"] - store.d_k)))
    return _("With only {pairs} pairs the error is already {error}, and {at_dk} at {dk} pairs: random labels are "
             "never quite perpendicular, so every pair leaks a little into the others' answers "
             "(cross-talk).").format(pairs=pairs, error=decimal(error, 2),
                                     at_dk=decimal(store.curve["error"][at], 2), dk=store.d_k)


def _how_many(store):
    right, asked = int(store.run.right.sum()), len(store.run.right)
    return 0 if right == asked else 2 if right == 0 else 1


def _score(store):
    right = int(store.run.right.sum())
    return dict(right=right, asked=len(store.run.right), wrong=len(store.run.right) - right,
                percent=percent(store.run.right.mean()), dk=store.d_k)


def _curve(name):
    """The true curve `name` of the capacity charts: (pairs, values)."""
    return lambda store: (np.asarray(store.curve["pairs"], dtype=float), np.asarray(store.curve[name], dtype=float))


def _verdicts_said(store):
    """The line over «Every query at this N»: how many of the queries are answered wrong."""
    wrong = int(np.sum(~store.run.right))
    return [_("Answered wrong: {wrong} of {n}.").format(wrong=wrong, n=len(store.run.targets))]


# what every card holds back: the texts under the title and the charts, which give the curves' numbers
TEXTS = ("point", "curve_text")
SKETCH_ERRORS = N_("Draw on «Recall error» the line you expect, from 1 pair to the last; then press «Show the real "
                   "line».")


def recall_card(setup, prompt, observe):
    """A card that asks how many questions get their number back: the student sketches «Answers right» first; `observe`
    is a msgid filled with the score."""
    return Card(setup=setup, prompt=prompt, choices=HOW_MANY, correct=_how_many,
                observe=lambda store: _(observe).format(**_score(store)),
                guess=Guess("accuracy.figure", _curve("accuracy")), look=("accuracy",),
                press=N_("Draw on «Answers right» the share of right answers you expect for each number of pairs the "
                         "chart shows, up to 16; then press «Show the real line»."),   # with rewrites it starts at 8
                hides=(*TEXTS, "errors.error", "errors.best", "accuracy.curve", "queries.verdicts"),
                answer=_verdicts_said)


CARDS = (
    Card(setup=SETTINGS,
         prompt=N_("Each label (key) here is a list of 16 numbers (d_k = 16). The best that any simple read-out "
                   "could do will be the dashed line of «Recall error». Up to how many pairs will it stay at zero, "
                   "with no mistake at all?"),
         choices=tuple(str(n) for n in BOUND_CHOICES),
         correct=lambda store: nearest(BOUND_CHOICES, _bound_zero(store)), observe=_bound_text,
         guess=Guess("errors.figure", _curve("bound")), look=("errors",), press=SKETCH_ERRORS,
         hides=(*TEXTS, "errors.bound", "errors.best", "errors.error", "accuracy.curve", "markers.dk"),
         answer=lambda store: []),
    Card(setup=SETTINGS,
         prompt=N_("The solid orange-red line of «Recall error» will be what this summary really does, with labels "
                   "pointing in random directions. With fewer pairs than 16, will it be at zero too?"),
         choices=(N_("Yes, zero up to 16 pairs"), N_("No, above zero from the first few pairs")),
         correct=lambda store: 1 if _few(store)[1] > 0.01 else 0, observe=_leaks_text,
         guess=Guess("errors.figure", _curve("error")), look=("errors",), press=SKETCH_ERRORS,
         hides=(*TEXTS, "errors.error", "accuracy.curve"), answer=lambda store: []),
    recall_card(PERPENDICULAR,
                N_("Now the 16 labels are perpendicular to each other, like the columns of the summary. With 16 "
                   "pairs, how many questions get their number back?"),
                N_("{right} of {asked} right: perpendicular labels do not leak into each other at all. But a "
                   "label of {dk} numbers has room for only {dk} perpendicular directions: one more pair would "
                   "have to share.")),
    recall_card(CHANGED,
                N_("Same 16 perpendicular labels, but 8 names now get a new number. With the sum rule (linear "
                   "attention), how many questions get the latest number?"),
                N_("{right} of {asked} right ({percent}%): the sum rule keeps the old number and the new one "
                   "added up under the same label, so {wrong} answers come back muddled.")),
    recall_card({**CHANGED, "rule": "delta"},
                N_("The same changed numbers, now with the delta rule (DeltaNet). How many questions get the "
                   "latest number?"),
                N_("{right} of {asked} right: before writing, the delta rule erases what the summary held under "
                   "the label, so the new number replaces the old one.")),
)
