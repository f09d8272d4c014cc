"""The lesson of "The transition knob": Anna's number changes from 21 to 99 in the phone book; only adding
keeps the old number, correcting (β) gives the new one, forgetting (α) gives it too but costs the oldest
pair; then three models side by side. Answers are read off the page's store (model.TransitionStore)."""
import numpy as np

from lineare.app.cards import Card, percent, plain
from lineare.app.i18n import N_, _, ngettext

KNOBS = {"preset": "update", "seed": "0", "gate": "none", "alpha": "0.9", "beta": "0",
         "model1": "linear", "model2": "mamba2", "model3": "deltanet"}
LATEST_OR_OLD = (N_("99, the new number"), N_("21, the old one"), N_("another number"))
OTHERS = ("Bruno", "Carla", "Dario")                # card 3's choices, then "none of them"


def _asked(store, name):
    return next(q for q in store.knob.recall.questions if q.token.key == name)


def _written(store, name):
    """The numbers written under `name`, in order."""
    return [t.value for t in store.sequence.tokens if t.kind == "write" and t.key == name]


def _latest_or_old(store, name="Anna"):
    """0: the latest number, 1: the first one written, 2: another."""
    question, first = _asked(store, name), _written(store, name)[0]
    return 0 if question.right else 1 if question.answer == first else 2


def _match(store, question, value):
    return percent(question.cosines[store.knob.recall.candidates.index(value)])


def _added_text(store):
    question, numbers = _asked(store, "Anna"), _written(store, "Anna")
    return _("It answers {answer}. Linear attention keeps everything written under a label, added up: under "
             "Anna, {sum}. The answer matches {old} at {p_old}% and {new} at {p_new}%.").format(
        answer=question.answer, sum=" + ".join(numbers), old=numbers[0], new=numbers[-1],
        p_old=_match(store, question, numbers[0]), p_new=_match(store, question, numbers[-1]))


def _corrected_text(store):
    question, numbers = _asked(store, "Anna"), _written(store, "Anna")
    return _("It answers {answer}, matching {new} at {p_new}%: when Anna:{new} came, the correction first erased "
             "what the summary held under Anna's label, then wrote the new number.").format(
        answer=question.answer, new=numbers[-1], p_new=_match(store, question, numbers[-1]))


def _wrong_other(store):
    """Index in OTHERS of the one question, besides Anna's, answered wrong (3: none of them)."""
    wrong = [i for i, name in enumerate(OTHERS) if not _asked(store, name).right]
    return wrong[0] if wrong else len(OTHERS)


def _kept(store, name):
    """(pairs written after `name`'s last write, share of that write left at the end): the knob's decay."""
    from lineare.app.dashboards.transition.model import log_decay
    tokens = store.sequence.tokens
    last = max(t for t, token in enumerate(tokens) if token.kind == "write" and token.key == name)
    g = log_decay(store.gate, store.alpha, tokens)[0, :, 0, 0].numpy()                     # [T]
    later = sum(token.kind == "write" for token in tokens[last + 1:])
    return later, float(np.exp(g[last + 1:].sum()))


def _forgot_text(store):
    index = _wrong_other(store)
    if index == len(OTHERS):
        return _("Every question is answered right at this setting.")
    name = OTHERS[index]
    question = _asked(store, name)
    later, kept = _kept(store, name)
    return _("«{name}?» gets {answer} instead of {expected}. After {name}'s pair {later} more pairs came, and "
             "each one faded the summary: only {kept}% of that pair is left. Forgetting makes room for the new "
             "numbers, and the oldest pairs pay.").format(
        name=name, answer=question.answer, expected=question.expected, later=later, kept=percent(kept))


def _all_right(store):
    return [c.recall.correct == len(c.recall.questions) for c in store.compared]


def _compared_text(store):
    from lineare.app.variants import REGISTRY
    return " · ".join(ngettext("{model}: {right} of {asked} right", "{model}: {right} of {asked} right",
                                c.recall.correct).format(
        model=_(REGISTRY[c.variant].label), right=c.recall.correct, asked=len(c.recall.questions))
        for c in store.compared) + "."


def _answers_said(store):
    """The answers under «What each answer matches», as the page writes them."""
    from lineare.app.dashboards.transition.pictures import answers_html
    return [plain(answers_html(store.knob.recall))]


def _scores_said(store):
    """The three small multiples' scores and answers, as the page writes them."""
    from lineare.app.dashboards.transition.pictures import answers_html
    return [plain(answers_html(c.recall, compact=True)) for c in store.compared]


# cards 1-3 ask what a question gets: the answers under the pictures, the similarity chart's colours and dots (the
# summary's choice), and the small multiples' scores further down stay back until a choice; the chart's framed
# right numbers stay. The pictures come up under the card (below the first screen at 1366 × 768 otherwise), with
# the row of buttons above them (the knobs' models) when the screen has room for both, rather than half of it under
# the card
ASKED = dict(hides=("answers", "recall.colours", "smalls.scores"), look=("recall",), lead=("jumps",),
             answer=_answers_said)

CARDS = (
    Card(setup=KNOBS,
         prompt=N_("In this phone book Anna's number is written as 21, twice, and later changed to 99. The knobs "
                   "are on linear attention: no forgetting, no correcting, it only adds. What does «Anna?» get?"),
         choices=LATEST_OR_OLD, correct=_latest_or_old, observe=_added_text, **ASKED),
    Card(setup={**KNOBS, "beta": "1"},
         prompt=N_("Now correct β is at 1: DeltaNet. Before writing a pair, it erases what the summary held under "
                   "that label. What does «Anna?» get now?"),
         choices=LATEST_OR_OLD, correct=_latest_or_old, observe=_corrected_text, **ASKED),
    Card(setup={**KNOBS, "gate": "scalar", "alpha": "0.5"},
         prompt=N_("No correcting, but forgetting: each time a pair arrives, the old summary keeps only half of "
                   "itself (α = 0.5, as in Mamba-2). «Anna?» now gets 99. Which other question goes wrong?"),
         choices=(*OTHERS, N_("none of them")), correct=_wrong_other, observe=_forgot_text, **ASKED),
    Card(setup=KNOBS,
         prompt=N_("Under the knob's pictures, three models read the same words, each in its own picture: linear "
                   "attention, Mamba-2 and DeltaNet. How many of them answer all four questions right?"),
         choices=(N_("none"), N_("one"), N_("two"), N_("all three")),
         correct=lambda store: sum(_all_right(store)), observe=_compared_text,
         hides=("smalls.scores",), look=("smalls",), answer=_scores_said),
)
