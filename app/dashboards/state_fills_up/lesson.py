"""The lesson of "The state fills up": a column per name, a number that changes (added, then corrected),
and more names than columns. Answers are read off the page's run (state_fills_up.model)."""
from lineare.app.cards import Card, percent, plain
from lineare.app.i18n import N_, _


def _asked(store, name):
    """The step where `name` is asked, and the memory's Answer there."""
    result = store.result
    t = next(i for i, token in enumerate(result.tokens) if token.kind == "ask" and token.key == name)
    return t, result.answers[t]


# cards 2 and 3: what «Anna?» gets after Anna:21 and Anna:99
CHANGED_CHOICES = ("21", "99", N_("a mix of both, counted as wrong"), N_("another number"))


def _answered(store, name):
    """0: the old number (21), 1: the new one (99), 2: a tie (a mix of both, no answer), 3: another: what the
    token strip shows, so that the strip, the right choice and the observation say the same."""
    answer = _asked(store, name)[1]
    return 2 if answer.tied else {"21": 0, "99": 1}.get(answer.value, 3)


def _changed_text(store):
    """What «Anna?» got, as the strip shows it: a tie (the sum rule), or one number and its match."""
    answer = _asked(store, "Anna")[1]
    if answer.tied:
        return _("A tie: Anna's column holds 21 and 99 added together, and the read-out matches each of them "
                 "at {percent}%, exactly as much. Adding cannot prefer the newer number, so there is no answer, "
                 "and a tie counts as wrong.").format(percent=percent(answer.similarity))
    from lineare.app.variants import REGISTRY
    if REGISTRY[store.result.variant].corrects:
        return _("It answers {answer} with a match of {percent}%: at Anna:99 the correction first took 21 out of "
                 "Anna's column.").format(answer=answer.value, percent=percent(answer.similarity))
    return _("It answers {answer} with a match of {percent}%.").format(answer=answer.value,
                                                                    percent=percent(answer.similarity))


def _crowded_text(store):
    """What «Anna?» got once the 17th name shares Anna's column."""
    answer, columns = _asked(store, "Anna")[1], store.result.columns
    sharer = next(name for name, column in columns.items() if column == columns["Anna"] and name != "Anna")
    if answer.tied:
        return _("A tie: the 17th name, {sharer}, had to share Anna's column, and the read-out matches {first} "
                 "and {second} equally ({percent}% each), so there is no answer. A summary of fixed size has "
                 "room for only so many names.").format(
            sharer=sharer, first=answer.tied[0], second=answer.tied[-1], percent=percent(answer.similarity))
    return _("It answers {answer} (match {percent}%): the 17th name, {sharer}, had to share Anna's column. A "
             "summary of fixed size has room for only so many names.").format(
        answer=answer.value, percent=percent(answer.similarity), sharer=sharer)


def _said(name):
    """The page's line under the player when «name?» is asked: what the memory answers there."""
    def said(store):
        from lineare.app.dashboards.state_fills_up.texts import step_caption
        return [plain(step_caption(store.result, _asked(store, name)[0]))]
    return said


def _last_said(store):
    from lineare.app.dashboards.state_fills_up.texts import step_caption
    return [plain(step_caption(store.result, store.length() - 1))]


def _rule_said(store):
    """The model's rule above the strip, as the page writes it: for DeltaNet, that new information replaces the old."""
    from lineare.app.variants import REGISTRY
    record = REGISTRY[store.result.variant]
    return [plain(f"**{_(record.label)}.** " + _(record.rule)), *_said("Anna")(store)]


def _all_right(store):
    answers = [a for token, a in zip(store.result.tokens, store.result.answers) if token.kind == "ask"]
    return sum(answer.right for answer in answers), len(answers)


CARDS = (
    Card(setup={"mode": "mechanism", "variant": "linear", "source": "preset", "preset": "phonebook",
                "keys": "perpendicular", "heads": "1", "t": "0"},
         prompt=N_("Four names are stored, each in a column of its own, then asked for. Will the memory "
                   "answer all four questions right?"),
         choices=(N_("Yes, all four"), N_("No, some get mixed up")),
         correct=lambda store: 0 if _all_right(store)[0] == _all_right(store)[1] else 1,
         at=lambda store: store.length() - 1,
         press=N_("Press ▶ Play (or → step by step) and watch the answers under the questions."),
         answer=_last_said,
         observe=lambda store: _("{right} of {asked} right: with a column each, no pair gets in another's "
                                 "way.").format(right=_all_right(store)[0], asked=_all_right(store)[1])),
    Card(setup={"mode": "mechanism", "variant": "linear", "source": "preset", "preset": "overwrite",
                "keys": "perpendicular", "heads": "1", "t": "0"},
         prompt=N_("Anna:21 is stored, and later Anna:99. Linear attention only adds. Asked «Anna?», what "
                   "will it answer?"),
         choices=CHANGED_CHOICES,
         correct=lambda store: _answered(store, "Anna"),
         at=lambda store: _asked(store, "Anna")[0],
         press=N_("Step with → up to «Anna?» and look at the answer and at Anna's column."),
         answer=_said("Anna"),
         observe=_changed_text),
    Card(setup={"mode": "mechanism", "variant": "deltanet", "source": "preset", "preset": "overwrite",
                "keys": "perpendicular", "heads": "1", "beta": "1", "t": "0"},
         prompt=N_("The same words, now with DeltaNet, which corrects before it writes. What will it "
                   "answer for «Anna?»?"),
         choices=CHANGED_CHOICES,
         correct=lambda store: _answered(store, "Anna"),
         at=lambda store: _asked(store, "Anna")[0],
         press=N_("Step with → and watch «What fades or is erased» at Anna:99."),
         hides=("rule",), look=("removed",), answer=_rule_said,
         observe=_changed_text),
    Card(setup={"mode": "mechanism", "variant": "linear", "source": "preset", "preset": "crowd",
                "keys": "perpendicular", "heads": "1", "t": "0"},
         prompt=N_("Now 24 names for 16 columns. Will «Anna?» still get back 26?"),
         choices=(N_("Yes"), N_("No")),
         correct=lambda store: 0 if _asked(store, "Anna")[1].right and _asked(store, "Anna")[1].similarity > 0.9
         else 1,
         at=lambda store: _asked(store, "Anna")[0],
         press=N_("Press ▶ Play and watch the gauge of free columns: a shared column turns red and striped."),
         look=("memory",), answer=_said("Anna"),
         observe=_crowded_text),
)
