"""Lessons: every card opens on settings where its question has an answer the model computes, the right
prediction is read off the run (checked here against a direct computation), and a card lives in the URL."""
import numpy as np
import pytest

from app import mechanism
from app.dashboards.state_fills_up.model import StateStore
from app.dashboards.state_fills_up.view import read_store_query
from app.i18n import _, language
from app.lessons import LESSONS, TITLES, apply_setup, card_of, neighbours
from app.session import Session
from app.urlstate import read_query

CARDS = [(slug, number) for slug, cards in LESSONS.items() for number in range(1, len(cards) + 1)]
STORES = {"state": lambda args: StateStore(**read_store_query(args)[0])}


def store_for(slug, card):
    args = {}
    apply_setup(args, card)
    values = {key: value[0].decode() for key, value in args.items()}
    assert all(isinstance(v, str) for v in card.setup.values())          # as a URL would carry them
    return STORES[slug](args), values


@pytest.mark.parametrize("slug,number", CARDS)
def test_every_card_has_an_answer_and_says_what_happened(slug, number):
    card = LESSONS[slug][number - 1]
    store, _values = store_for(slug, card)
    assert 3 <= len(LESSONS[slug]) <= 5 and slug in TITLES
    assert 2 <= len(card.choices) <= 4 and 0 <= card.correct(store) < len(card.choices)
    if card.at is not None:
        assert 0 <= card.at(store) < store.length() and card.press
    for lang in ("it", "en"):
        with language(lang):
            observed = card.observe(store)
            assert observed and "{" not in observed
            assert _(card.prompt) and all(_(choice) for choice in card.choices)
    with language("it"):
        assert _(card.prompt) != card.prompt                                   # translated


def test_a_sum_mixes_a_changed_number_and_the_correction_replaces_it():
    # cards 2 and 3: with a column per name, Anna's column holds v(21) + v(99) under the sum rule, so its
    # read-out matches neither number well; DeltaNet with β = 1 leaves exactly v(99) there
    v21, v99 = (mechanism.embedding(n, "value", 0, 0) for n in ("21", "99"))
    mixed = v21 + v99
    cosine = max(mixed @ v21, mixed @ v99) / np.linalg.norm(mixed)
    assert cosine < 0.9
    summed, _v = store_for("state", LESSONS["state"][1])
    corrected, _v = store_for("state", LESSONS["state"][2])
    assert LESSONS["state"][1].correct(summed) == 2                            # "a mix of both"
    assert LESSONS["state"][2].correct(corrected) == 1                         # "99"
    anna = next(t for t, token in enumerate(corrected.result.tokens) if token.kind == "ask" and token.key == "Anna")
    column = corrected.result.columns["Anna"]
    np.testing.assert_allclose(corrected.result.records[anna].state[0, 0][:, column], v99, atol=1e-6)
    np.testing.assert_allclose(summed.result.records[anna].state[0, 0][:, column], mixed, atol=1e-6)


def test_crowded_columns_make_anna_fail_and_a_column_each_does_not():
    phonebook, _v = store_for("state", LESSONS["state"][0])
    crowd, _v = store_for("state", LESSONS["state"][3])
    assert LESSONS["state"][0].correct(phonebook) == 0                         # all four right
    assert LESSONS["state"][3].correct(crowd) == 1                             # Anna's column is shared
    assert list(crowd.result.columns.values()).count(crowd.result.columns["Anna"]) == 2


def test_a_card_lives_in_the_url_and_bad_values_are_notices():
    values, notices = read_query(Session, Session.READ_ONLY_URL, {"lesson": [b"state"], "card": [b"3"]})
    session = Session(**values)
    assert notices == [] and card_of(session)[:2] == ("state", 3)
    for bad in ({"lesson": [b"<script>"], "card": [b"1"]}, {"lesson": [b"state"], "card": [b"99"]},
                {"lesson": [b"state"], "card": [b"-1"]}):
        values, notices = read_query(Session, Session.READ_ONLY_URL, bad)
        assert notices and card_of(Session(**values)) is None


def test_cards_link_in_the_chapters_order():
    session = Session(language="it", level="superiore")
    first_previous, first_next = neighbours("state", 1, session)
    assert first_previous is None and "lesson=state&card=2" in first_next and "lang=it&level=superiore" in first_next
    last = len(LESSONS["state"])
    assert neighbours("state", last, session)[0].endswith(f"card={last - 1}")
