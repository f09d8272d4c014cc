"""The lesson of "Parallel = recurrent": the three ways give the same answers, the block size slides from
one way to another, every column may fade at its own speed, and what is left between them is rounding.
Answers are read off the page's store (model.FormsStore: its Comparison; not the measured cost, which
comes later and only on request)."""
from lineare.app.cards import Card, plain
from lineare.app.i18n import N_, _, ngettext

FORMS = {"variant": "retnet", "T": "64", "chunk": "16", "seed": "0", "t": "0"}
SAME = (N_("Yes, the same up to rounding"), N_("No, a little different"), N_("No, quite different"))
BECOMES = (N_("the parallel way"), N_("the recurrent way"), N_("neither"))
SHRINK = (N_("shrink to almost nothing"), N_("stay about the same"), N_("grow"))     # "the differences would…"
ROUNDING = 1e-5            # the engine's tests hold the float32 forms to this relative difference


def _worst(store, dtype="float32"):
    """The largest relative difference between two of the three forms."""
    from lineare.app.dashboards.parallel_recurrent.model import PAIRS
    return max(store.comparison.errors[dtype, pair][1] for pair in PAIRS)


def _same(store):
    worst = _worst(store)
    return 0 if worst <= ROUNDING else 1 if worst <= 1e-2 else 2


def _all_answered(store):
    """The frame at which the chunked form has answered every word (the parallel one did in its first step;
    the recurrent one is still on its way, and the strips are compared where all three have answered)."""
    return _steps_of(store, "chunked") - 1


def _same_text(store):
    from lineare.app.dashboards.parallel_recurrent.pictures import scientific
    from lineare.app.variants import running_name
    return _("Where all three have answered, the strips look alike, because they are: for {model} the largest "
             "difference between two ways is {error} of the size of the answers, a speck of rounding.").format(
        model=running_name(store.variant), error=scientific(_worst(store)))


def _worst_said(store, dtype="float32"):
    """The largest difference between two ways, as the page writes it."""
    from lineare.app.dashboards.parallel_recurrent.pictures import scientific
    return [scientific(_worst(store, dtype))]


def _same_said(store):
    """The largest difference, and the page's introduction, whose heading says the three ways answer the same."""
    from lineare.app.dashboards.parallel_recurrent.view import INTRO_PLAIN
    return [*_worst_said(store), plain(_(INTRO_PLAIN))]


def _chunked_title(store):
    """The chunked strip's title at the first step (how many words it has answered)."""
    from lineare.app.dashboards.parallel_recurrent.model import answered
    from lineare.app.dashboards.parallel_recurrent.view import FormsView
    T, C = store.comparison.length, store.comparison.chunk_size
    return [FormsView._strip_title("chunked", T, C, int(answered("chunked", T, C)[0]))]


# cards 1 and 3 ask whether the strips agree: the words that say so (the introduction's heading too), and the
# differences further down (the magnified difference's scale, the table), wait until the chunked way has answered
# every word
COMPARED = ("point", "intro", "outputs_text", "differences", "differences.table")


def _steps_of(store, form):
    from lineare.app.dashboards.parallel_recurrent.model import steps_needed
    return steps_needed(form, store.comparison.length, store.comparison.chunk_size)


def _becomes(store):
    """0: the chunked way takes the parallel way's steps, 1: the recurrent way's, 2: neither."""
    chunked = _steps_of(store, "chunked")
    return 0 if chunked == _steps_of(store, "parallel") else 1 if chunked == _steps_of(store, "recurrent") else 2


def _becomes_text(store):
    steps = _steps_of(store, "chunked")
    return _("The parallel way: with blocks of {size} the chunked way answers all {n} words in {steps}, "
             "and its one block is the whole table of {n} × {n} words. With blocks of one word it would be the "
             "recurrent way ({n} steps). The block size slides from one way to the other.").format(
        size=store.comparison.chunk_size, n=store.comparison.length,
        steps=ngettext("{count} step", "{count} steps", steps).format(count=steps))


def _shrink(store):
    ratio = _worst(store, "float64") / _worst(store)
    return 0 if ratio < 1e-3 else 2 if ratio > 10 else 1


def _shrink_text(store):
    from lineare.app.dashboards.parallel_recurrent.pictures import scientific
    return _("With float32 the largest difference is {f32}; with float64 it is {f64}. The differences are "
             "rounding, not a difference between the ways: the table under the strips shows both.").format(
        f32=scientific(_worst(store)), f64=scientific(_worst(store, "float64")))


CARDS = (
    Card(setup=FORMS,
         prompt=N_("The three ways compute the same layer on the same words in a different order. Where all three "
                   "have answered, are their answers the same?"),
         choices=SAME, correct=_same, at=_all_answered,
         press=N_("Press ▶ Play and compare the three strips as they fill up."), observe=_same_text,
         hides=COMPARED, look=("strips",), answer=_same_said),
    Card(setup={**FORMS, "chunk": "64"},
         prompt=N_("Now each block is as long as the whole text: 64 words. Which way does the chunked way "
                   "become?"),
         choices=BECOMES, correct=_becomes, observe=_becomes_text,
         hides=("point", "chunked"), look=("strips",), answer=_chunked_title),   # the chunked strip at the choice
    Card(setup={**FORMS, "variant": "gla"},
         prompt=N_("In GLA every column of the summary fades at its own speed, so the parallel way needs one table "
                   "per column. Does it still give the same answers as the recurrent way?"),
         choices=SAME, correct=_same, at=_all_answered,
         press=N_("Press ▶ Play and compare the strips again."), observe=_same_text,
         hides=COMPARED, look=("strips",), answer=_same_said),
    Card(setup=FORMS,
         prompt=N_("The differences between the ways are tiny, but not zero. If every number carried twice as many "
                   "digits (float64 instead of float32), the differences would…"),
         choices=SHRINK, correct=_shrink, observe=_shrink_text, look=("outputs_section",),
         hides=("differences.table", "outputs_text"),                          # both give float64's differences
         answer=lambda store: _worst_said(store, "float64")),
)
