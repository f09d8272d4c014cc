"""The lesson of "Architectures": who forgets fastest, how DeltaNet forgets without a forget gate, what its
transition does to the label it writes, and two models with one transition. Answers are read off the
page's numbers (model.forgetting_curve and model.eigenvalues, from the engine's own steps)."""
import numpy as np

from lineare.app.cards import Card, Guess, decimal, percent
from lineare.app.i18n import N_, _

NAMES = {"retnet": "RetNet", "mamba2": "Mamba-2", "gla": "GLA", "deltanet": "DeltaNet"}   # the registry's labels
FASTEST = ("retnet", "mamba2", "deltanet")
TWINS = ("retnet", "mamba2", "gla", "deltanet")
AFTER = 10                                            # card 1 compares what is left after this many words
KEPT = (N_("all of it"), N_("about half"), N_("almost nothing"))
EIGEN = (N_("keeps it (1)"), N_("fades it (between 0 and 1)"), N_("erases it (0)"), N_("flips its sign (below 0)"))
TINY = 1e-6


def card_alpha(variant):
    from lineare.app.dashboards.architectures.model import card_alpha
    return card_alpha(variant)


def _curve(variant):
    from lineare.app.dashboards.architectures.model import forgetting_curve
    return forgetting_curve(variant)


def _fastest(_store):
    return min(range(len(FASTEST)), key=lambda i: _curve(FASTEST[i])[AFTER])


def _fastest_text(_store):
    left = ", ".join(_("{model} {percent}%").format(model=NAMES[v], percent=percent(_curve(v)[AFTER]))
                     for v in FASTEST)
    fastest = FASTEST[_fastest(None)]
    return _("What is left of the first pair after {n} words: {left}. {model} forgets fastest here because this "
             "page gives it α = {alpha} at every word, against RetNet's fixed γ ≈ {gamma}. A trained Mamba-2 "
             "chooses its α word by word, from what it reads.").format(
        n=AFTER, left=left, model=NAMES[fastest], alpha=decimal(card_alpha(fastest), 1),
        gamma=decimal(card_alpha("retnet"), 2))


def _dimension():
    from lineare.app.dashboards.architectures.model import D
    return D


def _kept(share):
    """0: all of it (90% or more), 1: about half, 2: almost nothing (10% or less)."""
    return 0 if share >= 0.9 else 2 if share <= 0.1 else 1


def _deltanet_text(_store):
    curve = _curve("deltanet")
    return _("{percent}% is left after {n} words. DeltaNet has no forget gate, but every new label overlaps the "
             "old one a little, and every correction erases that little bit: {half}% is already gone after {m} "
             "words. How much depends on the labels' length, {d} numbers here: longer random labels overlap "
             "less.").format(percent=percent(curve[-1]), n=len(curve) - 1,
                             half=percent(1 - curve[AFTER]), m=AFTER, d=_dimension())


def _eigen(_store):
    from lineare.app.dashboards.architectures.model import eigenvalues
    return eigenvalues("deltanet")


def _lowest(store):
    low = float(_eigen(store).min())
    return 0 if low > 1 - TINY else 1 if low > TINY else 2 if low > -TINY else 3


def _eigen_text(store):
    values = _eigen(store)
    return _("{ones} of its {d} numbers are 1 and one is {low}: along the label it writes, the old information "
             "is erased before the new one goes in; every other direction is kept whole.").format(
        ones=int((abs(values - 1) < TINY).sum()), d=len(values), low=decimal(round(float(values.min()), 2) or 0.0, 0))


def gap(variant, other="rwkv6"):
    """The largest difference between two forgetting curves."""
    return float(abs(_curve(variant) - _curve(other)).max())


def _twin(_store):
    return min(range(len(TWINS)), key=lambda i: gap(TWINS[i]))


def _twin_text(store):
    twin = TWINS[_twin(store)]
    return _("On {model}'s: the two lines coincide, because the two transitions are the same, each column of the "
             "summary fading at its own speed. The two models differ elsewhere: RWKV-6 reads before writing, with "
             "a bonus for the current word.").format(model=NAMES[twin])


def _line(variant):
    """A model's forgetting curve as drawn: (tokens after the write, share left)."""
    def line(_store):
        curve = _curve(variant)
        return np.arange(len(curve), dtype=float), np.asarray(curve, dtype=float)
    return line


CARDS = (
    Card(setup={"arch": "linear"},
         prompt=N_("A pair is written at word 0, then every word writes a pair of its own. «What each direction keeps "
                   "per token» shows what each model multiplies its summary by at every word. Which of these models "
                   "will forget the first pair fastest?"),
         choices=tuple(NAMES[v] for v in FASTEST), correct=_fastest, observe=_fastest_text,
         guess=Guess("forgetting.figure", _line("mamba2")), look=("forgetting",),
         press=N_("Draw on «What is left of a pair» the line you expect for Mamba-2, from 1 at word 0; then press "
                  "«Show the real line»."),
         hides=("forgetting.all_but_linear", "pictures_help"), answer=lambda store: []),
    Card(setup={"arch": "deltanet"},
         prompt=N_("DeltaNet has no forget gate: it only corrects what is stored under the label it writes. After "
                   "64 words, each writing under a random label of its own with 16 numbers, how much of the first "
                   "pair is left?"),
         choices=KEPT, correct=lambda _store: _kept(_curve("deltanet")[-1]), observe=_deltanet_text,
         guess=Guess("forgetting.figure", _line("deltanet")), look=("forgetting",),
         press=N_("Draw on «What is left of a pair» the line you expect for DeltaNet, from 1 at word 0; then press "
                  "«Show the real line»."),
         hides=("forgetting.correcting", "pictures_help"), answer=lambda store: []),
    Card(setup={"arch": "deltanet"},
         prompt=N_("At each word DeltaNet multiplies its summary by one number per direction a label can point "
                   "in (the second picture). Along the label it is writing, what does it do?"),
         choices=EIGEN, correct=_lowest, observe=_eigen_text, look=("eigen",),
         hides=("eigen.correcting", "pictures_help"), answer=lambda store: []),
    Card(setup={"arch": "rwkv6"},
         prompt=N_("RWKV-6 fades each column of its summary at its own speed, chosen by each word. Its line in «What "
                   "is left of a pair» is not drawn yet: on which model's line will it lie?"),
         choices=tuple(NAMES[v] for v in TWINS), correct=_twin, observe=_twin_text, look=("forgetting",),
         hides=("forgetting.rwkv6", "eigen.correcting", "eigen.fading", "pictures_help", "cards.rwkv6"),
         answer=lambda store: []),
)
