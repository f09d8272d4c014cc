"""Lessons: every card opens on settings where its question has an answer the model computes, the right
prediction is read off the run (checked here against a direct computation), and a card lives in the URL."""
import numpy as np
import pytest

from lineare.app import mechanism
from lineare.app.dashboards import DASHBOARDS
from lineare.app.dashboards.architectures.model import ArchitecturesStore
from lineare.app.dashboards.memory_fails.model import MemoryStore
from lineare.app.dashboards.parallel_recurrent.model import FormsStore
from lineare.app.dashboards.state_fills_up.model import StateStore
from lineare.app.dashboards.state_fills_up.view import read_store_query
from lineare.app.dashboards.take_away_softmax.model import SoftmaxStore
from lineare.app.dashboards.transition.model import TransitionStore
from lineare.app.dashboards.two_bills.calculator import CalculatorStore
from lineare.app.dashboards.two_bills.model import GenerationStore
from lineare.app.components.player import Player
from lineare.app.i18n import _, language
from lineare.app.lessons import LESSONS, TITLES, apply_setup, card_of, neighbours
from lineare.app.session import Session
from lineare.app.urlstate import read_query

CARDS = [(slug, number) for slug, cards in LESSONS.items() for number in range(1, len(cards) + 1)]


def from_url(Store):
    """A page's store from URL args, as DashboardView.open_store makes it."""
    return lambda args: Store(**read_query(Store, Store.URL, args)[0])


STORES = {"state": lambda args: StateStore(**read_store_query(args)[0]), "softmax": from_url(SoftmaxStore),
          "two-bills": from_url(GenerationStore), "transition": from_url(TransitionStore),
          "memory-fails": from_url(MemoryStore), "parallel-recurrent": from_url(FormsStore),
          "architectures": from_url(ArchitecturesStore)}
# the frames of the pages with a player (a card's `at` must be one of them)
FRAMES = {"state": lambda store: store.length(), "two-bills": lambda store: store.result.tokens,
          "softmax": lambda store: store.run.length,
          "parallel-recurrent": lambda store: store.comparison.length}


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
        assert 0 <= card.at(store) < FRAMES[slug](store) and card.press
    if card.guess is not None:
        assert card.press and card.look
    observed = {}
    for lang in ("it", "en"):
        with language(lang):
            observed[lang] = card.observe(store)
            assert observed[lang] and "{" not in observed[lang]
            assert _(card.prompt) and all(_(choice) for choice in card.choices)
    assert observed["it"] != observed["en"]                                    # the observation too
    with language("it"):
        assert _(card.prompt) != card.prompt                                   # translated


def test_lessons_follow_the_chapter():
    order = [d.slug for d in DASHBOARDS]
    assert list(LESSONS) == [slug for slug in order if slug in LESSONS]
    assert set(LESSONS) == {d.slug for d in DASHBOARDS}                   # every page has its lesson


@pytest.mark.parametrize("slug", [slug for slug in LESSONS if slug != "state"])
def test_every_setup_is_the_pages_own_url_parameters_with_valid_values(slug):
    owners = {"softmax": (SoftmaxStore, Player), "two-bills": (GenerationStore, CalculatorStore, Player),
              "transition": (TransitionStore,),
              "memory-fails": (MemoryStore,), "parallel-recurrent": (FormsStore, Player),
              "architectures": (ArchitecturesStore,)}[slug]
    keys = {key for owner in owners for key in owner.URL.values()}
    for card in LESSONS[slug]:
        assert set(card.setup) <= keys, set(card.setup) - keys          # a misspelt key would be ignored
        args = {key: [value.encode()] for key, value in card.setup.items()}
        for owner in owners:
            assert read_query(owner, owner.URL, args)[1] == []             # no value is refused


def test_a_sum_mixes_a_changed_number_and_the_correction_replaces_it():
    # cards 2 and 3: with a column per name, Anna's column holds v(21) + v(99) under the sum rule, so its
    # read-out matches neither number well; DeltaNet with β = 1 leaves exactly v(99) there
    v21, v99 = (mechanism.embedding(n, "value", 0, 0) for n in ("21", "99"))
    mixed = v21 + v99
    cosine = max(mixed @ v21, mixed @ v99) / np.linalg.norm(mixed)
    assert cosine < 0.9
    summed, _v = store_for("state", LESSONS["state"][1])
    corrected, _v = store_for("state", LESSONS["state"][2])
    # the read-out is exactly as close to both numbers: a tie, the card's right choice (the observation gives
    # its match)
    anna_summed = summed.result.answers[next(t for t, token in enumerate(summed.result.tokens)
                                             if token.kind == "ask" and token.key == "Anna")]
    assert anna_summed.similarity < 0.9 and anna_summed.tied == ("21", "99")
    assert abs(mixed @ v21 - mixed @ v99) < 1e-12                              # the same cosine, exactly
    assert LESSONS["state"][1].choices[LESSONS["state"][1].correct(summed)] == "a mix of both, counted as wrong"
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


def read_columns(preset):
    """Each question of a state-page preset answered directly in NumPy: linear attention with a column
    per name (the i-th new name takes column i mod 16), S ← S + v kᵀ, the read-out S k; the answer is the
    stored number whose vector points most like it, with that cosine."""
    tokens = mechanism.parse(mechanism.PRESETS[preset])[0]
    value = lambda number: mechanism.embedding(number, "value", 0, 0)
    numbers = sorted({t.value for t in tokens if t.kind == "write"})
    columns, latest, S, answers = {}, {}, np.zeros((mechanism.D_V, mechanism.D_K)), {}
    for token in tokens:
        if token.key is not None:
            columns.setdefault(token.key, len(columns) % mechanism.D_K)
        if token.kind == "write":
            S[:, columns[token.key]] += value(token.value)
            latest[token.key] = token.value
        elif token.kind == "ask":
            o = S[:, columns[token.key]]
            best = max(numbers, key=lambda n: value(n) @ o)
            answers[token.key] = (best, float(value(best) @ o / np.linalg.norm(o)), latest[token.key])
    return answers


def test_state_a_column_each_answers_all_four_and_a_crowd_mixes_anna():
    phonebook = read_columns("phonebook")
    assert len(phonebook) == 4 and all(a == e and s > 0.999 for a, s, e in phonebook.values())
    assert answer_of("state", 1)[2] == "Yes, all four"
    anna, similarity, expected = read_columns("crowd")["Anna"]
    assert expected == "26" and similarity < 0.9                       # Anna's column also holds Ugo's 58
    assert answer_of("state", 4)[2] == "No"


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
    slugs = list(LESSONS)
    first_previous, first_next = neighbours(slugs[0], 1, session)
    assert first_previous is None and f"lesson={slugs[0]}&card=2" in first_next
    assert "lang=it&level=superiore" in first_next
    last = len(LESSONS["state"])
    assert neighbours("state", last, session)[0].endswith(f"card={last - 1}")
    # across pages: a lesson's last card leads to the next lesson's first, and back
    for before, after in zip(slugs, slugs[1:]):
        count = len(LESSONS[before])
        assert neighbours(before, count, session)[1].endswith(f"lesson={after}&card=1")
        assert neighbours(after, 1, session)[0].endswith(f"lesson={before}&card={count}")
    assert neighbours(slugs[-1], len(LESSONS[slugs[-1]]), session)[1] is None


# ------------------------------------------------------------- each page's answers, computed directly

def answer_of(slug, number):
    """(card, the page's store as the card opens it, the card's right choice as text)."""
    card = LESSONS[slug][number - 1]
    store, _values = store_for(slug, card)
    return card, store, card.choices[card.correct(store)]


def test_softmax_the_table_the_same_answers_and_a_summary_of_fixed_size():
    from lineare.app.dashboards.take_away_softmax.model import elu_plus_one, sentence_vectors
    q, k, v = sentence_vectors()
    T, d = q.shape
    assert answer_of("softmax", 1)[2] == str(T * (T + 1) // 2)              # the causal half, diagonal included
    # without the softmax, the last word's answer from its shares of the table and from the summary
    phi_q, phi_k = elu_plus_one(q), elu_plus_one(k)
    shares = phi_k @ phi_q[-1]                                              # [T]
    S, z = v.T @ phi_k, phi_k.sum(0)                                        # Σ v φ(k)ᵀ [d_v, d_k], Σ φ(k) [d_k]
    np.testing.assert_allclose(shares @ v / shares.sum(), S @ phi_q[-1] / (z @ phi_q[-1]), rtol=1e-12)
    assert answer_of("softmax", 2)[2] == "exactly the same, up to rounding"
    assert S.size + z.size == d * d + d and answer_of("softmax", 3)[2] == "it keeps its size"


@pytest.mark.parametrize("number", [4, 5])
def test_softmax_which_order_does_less_work(number):
    card, store, answer = answer_of("softmax", number)
    T, d = store.length, store.dim
    table, summary = 2 * T * T * d, 2 * T * d * d        # (QKᵀ)V: T·T·d and T·T·d; Q(KᵀV): d·T·d and T·d·d
    assert answer == ("the summary first" if summary < table else "the table first")
    with language("en"):
        assert f"{table:,}" in card.observe(store) and f"{summary:,}" in card.observe(store)


def test_two_bills_the_notebook_outgrows_the_summary_where_the_bytes_say():
    card, store, answer = answer_of("two-bills", 1)
    result = store.result
    H, d = result.heads, result.dim
    # float32: each word adds a key and a value per head (2·H·d numbers); the state holds H·d·d numbers
    crossing = next(n for n in range(1, 10_000) if 2 * H * d * 4 * n > H * d * d * 4)
    assert result.crossing == crossing and answer == "30"
    frame = card.at(store)
    assert result.kv_cache_bytes[frame] > result.state_bytes[frame] >= result.kv_cache_bytes[frame - 1]


def test_two_bills_twice_the_text_is_four_times_the_work():
    card, store, answer = answer_of("two-bills", 2)
    H, d, n = store.result.heads, store.result.dim, store.result.tokens
    triangle = lambda m: sum(H * t * (d + d) for t in range(1, m + 1))    # t scores and t values per word
    assert 3.5 < triangle(n) / triangle(n // 2) < 4.5 and answer == "four times as much"
    with language("en"):
        assert f"{triangle(n):,}" in card.observe(store) and f"{triangle(n // 2):,}" in card.observe(store)


def test_two_bills_the_slower_layer_is_read_off_the_times_the_page_shows():
    card, store, answer = answer_of("two-bills", 3)
    at = card.at(store)
    softmax, state = (float(np.median(times[:at + 1])) for times in (store.result.softmax_ms, store.result.state_ms))
    expected = ("softmax attention" if softmax > 1.5 * state else
                "the summary (linear attention)" if state > 1.5 * softmax else "about the same")
    assert answer == expected and at == 8 and store.result.context == 512


def test_two_bills_a_real_models_notebook_against_its_weights():
    _card, _store, answer = answer_of("two-bills", 4)
    # Llama-3.1-8B's config: 32 layers, 8 key-value heads of 128, 8.03e9 parameters; bf16: 2 bytes a number
    cache, weights = 32 * 8 * (128 + 128) * 131_072 * 2, 8.03e9 * 2
    assert 0.5 < cache / weights < 2 and answer == "about as much"


def read_phone_book(beta=0.0, keep=1.0, seed=0):
    """Each question's answer on the knob page's phone book, computed directly in NumPy: at every write
    S ← keep·S, then β of what S holds along k erased, then v kᵀ added; the answer is the stored number
    whose vector is closest (cosine) to S q."""
    from lineare.app.dashboards.transition.model import PRESETS
    tokens = mechanism.parse(PRESETS["update"])[0]
    vector = lambda text, kind: mechanism.embedding(text, kind, 0, seed)
    numbers = sorted({t.value for t in tokens if t.kind == "write"})
    S, answers = np.zeros((mechanism.D_V, mechanism.D_K)), {}
    for token in tokens:
        if token.kind == "write":
            k = vector(token.key, "key")
            S = keep * S
            S = S - beta * np.outer(S @ k, k) + np.outer(vector(token.value, "value"), k)
        elif token.kind == "ask":
            o = S @ vector(token.key, "key")
            answers[token.key] = max(numbers, key=lambda n: vector(n, "value") @ o / np.linalg.norm(o))
    return answers


LATEST = {"Anna": "99", "Bruno": "47", "Carla": "35", "Dario": "62"}


def test_transition_adding_keeps_the_old_number_and_correcting_gives_the_new():
    assert read_phone_book()["Anna"] == "21" and answer_of("transition", 1)[2] == "21, the old one"
    assert read_phone_book(beta=1.0)["Anna"] == "99" and answer_of("transition", 2)[2] == "99, the new number"


def test_transition_forgetting_gives_anna_the_new_number_and_costs_one_other():
    answers = read_phone_book(keep=0.5)
    wrong = [name for name in ("Bruno", "Carla", "Dario") if answers[name] != LATEST[name]]
    assert answers["Anna"] == "99" and len(wrong) == 1                   # what the card's question assumes
    assert answer_of("transition", 3)[2] == wrong[0]


def test_transition_the_forgotten_pair_keeps_half_per_pair_written_after_it():
    """Card 3's observation: of the wrong name's last pair, α = 0.5 of it is kept at each pair written after it
    (as read_phone_book forgets), counted here from the phone book itself: 4 pairs later, 6 % is left."""
    from lineare.app.dashboards.transition.model import PRESETS
    card, store, name = answer_of("transition", 3)
    alpha = float(card.setup["alpha"])
    tokens = mechanism.parse(PRESETS["update"])[0]
    last = max(t for t, token in enumerate(tokens) if token.kind == "write" and token.key == name)
    later = sum(token.kind == "write" for token in tokens[last + 1:])
    with language("en"):
        text = card.observe(store)
    assert f"After {name}'s pair {later} more pairs came" in text, text
    assert f"only {round(100 * alpha ** later)}% of that pair is left" in text, text
    assert (alpha, later, round(100 * alpha ** later)) == (0.5, 4, 6)


def test_a_share_is_written_as_the_nearest_whole_percent_in_the_pages_language():
    from lineare.app.cards import percent

    with language("en"):
        assert [percent(x) for x in (0.0625, 0.834, 0.836, 0.995, 0.004, 1)] == ["6", "83", "84", "100", "0", "100"]
    with language("it"):
        assert percent(0.5) == "50" and percent(0.0625) == "6"


def test_transition_how_many_of_the_three_models_get_everything_right():
    # linear attention; Mamba-2 with the knob's α = 0.9 on writes; DeltaNet (β = 1)
    runs = [read_phone_book(), read_phone_book(keep=0.9), read_phone_book(beta=1.0)]
    perfect = sum(run == LATEST for run in runs)
    assert answer_of("transition", 4)[2] == ("none", "one", "two", "all three")[perfect]


def test_memory_the_bound_leaves_zero_at_d_k_pairs():
    _card, store, answer = answer_of("memory-fails", 1)
    zero = [int(N) for N in store.curve["pairs"] if 0.5 * max(0.0, 1 - store.d_k / N) == 0]
    assert max(zero) == store.d_k == 16 and answer == "16"


def test_memory_random_labels_leak_from_the_first_pairs():
    from lineare.app.dashboards.memory_fails.model import TRIALS
    from lineare.engine import tasks
    _card, store, answer = answer_of("memory-fails", 2)
    N = 4
    errors = []
    for trial in range(TRIALS):                       # the sum rule's cross-talk: ½ Σ_{j≠i} (k_j·k_i)², mean over i
        K = tasks.capacity_data(num_pairs=N, d_k=16, keys="random", seed=trial).keys.numpy()
        overlap = K @ K.T - np.eye(N)
        errors.append(0.5 * (overlap ** 2).sum(1).mean())
    assert store.curve["pairs"][1] == N
    assert np.isclose(np.mean(errors), store.curve["error"][1]) and np.mean(errors) > 0.01
    assert answer == "No, above zero from the first few pairs"


def recalled(rule, rewrites):
    """How many of 16 perpendicular labels (d_k = 16) get their latest value back, in NumPy."""
    from lineare.app.dashboards.memory_fails.model import dense_values
    from lineare.engine import tasks
    data = tasks.capacity_data(num_pairs=16, d_k=16, keys="orthogonal", repeat=rewrites, seed=0)
    keys, values = data.keys.numpy(), dense_values(len(data.keys), 16, 0).numpy()
    S = np.zeros((16, 16))
    for k, v in zip(keys, values):
        S += np.outer(v - (S @ k if rule == "delta" else 0), k)
    readouts = data.queries.numpy() @ S.T
    answers = (readouts / np.linalg.norm(readouts, axis=1, keepdims=True) @ values.T).argmax(1)
    return int((answers == data.targets.numpy()).sum())


@pytest.mark.parametrize("number,rule,rewrites", [(3, "sum", 0), (4, "sum", 8), (5, "delta", 8)])
def test_memory_perpendicular_labels_and_changed_numbers(number, rule, rewrites):
    right = recalled(rule, rewrites)
    card, store, answer = answer_of("memory-fails", number)
    assert (store.rule, store.rewrites) == (rule, rewrites)
    assert answer == ("every one" if right == 16 else "none" if right == 0 else "some, not all")
    assert (rule, rewrites, right) != ("sum", 8, 16)                    # the sum rule muddles changed numbers


def recurrent_numpy(variant, length, seed, alpha):
    """The layer word by word in NumPy, float64: S ← S·diag(decay) + v kᵀ, o = S q / √d."""
    from lineare.app.dashboards.parallel_recurrent.model import make_inputs
    q, k, v, gates = (x if isinstance(x, dict) else x[0, :, 0].numpy()
                      for x in make_inputs(variant, length, seed, alpha))
    g = gates["g"].numpy()
    decay = np.exp(np.broadcast_to(g[0, :, 0] if g.ndim == 4 else g.reshape(1, 1), (length, q.shape[1])))
    S, out = np.zeros((v.shape[1], k.shape[1])), []
    for t in range(length):
        S = S * decay[t] + np.outer(v[t], k[t])
        out.append(S @ q[t] / np.sqrt(q.shape[1]))
    return np.array(out)                                                    # [T, d_v]


@pytest.mark.parametrize("number,variant", [(1, "retnet"), (3, "gla")])
def test_parallel_the_three_ways_agree_with_a_direct_loop(number, variant):
    card, store, answer = answer_of("parallel-recurrent", number)
    assert store.variant == variant
    direct = recurrent_numpy(variant, store.length, store.seed, store.alpha)
    for form, output in store.comparison.outputs.items():
        assert np.sqrt(np.mean((output - direct) ** 2) / np.mean(direct ** 2)) < 1e-5, form
    assert answer == "Yes, the same up to rounding"
    assert card.at(store) == -(-store.length // store.chunk_size) - 1     # when the chunked way is done


def test_parallel_blocks_as_long_as_the_text_are_the_parallel_way():
    card, store, answer = answer_of("parallel-recurrent", 2)
    assert store.chunk_size == store.length and answer == "the parallel way"
    with language("en"):
        assert f"in {-(-store.length // store.chunk_size)} step," in card.observe(store)       # one block: one step


def test_parallel_the_differences_are_rounding():
    _card, store, answer = answer_of("parallel-recurrent", 4)
    from lineare.engine.ops import FORMS, forward
    from lineare.app.dashboards.parallel_recurrent.model import make_inputs
    q, k, v, gates = make_inputs(store.variant, store.length, store.seed, store.alpha)      # float64
    outputs = [forward(store.variant, q, k, v, form=form, chunk_size=store.chunk_size, **gates)[0] for form in FORMS]
    assert max(float((a - outputs[0]).abs().max()) for a in outputs) < 1e-12
    assert answer == "shrink to almost nothing"


def test_architectures_forgetting_computed_directly():
    from lineare.app.dashboards.architectures.lesson import NAMES
    from lineare.app.dashboards.architectures.model import RETNET_GAMMA, forgetting_curve, texts
    from lineare.app.variants import REGISTRY
    first, later = (x.numpy() for x in texts())
    rows, shares = first.copy(), [np.ones(len(first))]          # DeltaNet, β = 1: k₀ᵀ (I − k₁k₁ᵀ) ⋯ (I − k_nk_nᵀ) k₀
    for t in range(later.shape[1]):
        k = later[:, t]
        rows = rows - (rows * k).sum(1, keepdims=True) * k
        shares.append((rows * first).sum(1))
    deltanet = np.mean(shares, axis=1)
    n = np.arange(len(deltanet))
    direct = {"retnet": RETNET_GAMMA ** n, "mamba2": 0.8 ** n, "deltanet": deltanet}   # a scalar decay: α^n
    for variant, curve in direct.items():
        np.testing.assert_allclose(forgetting_curve(variant), curve, atol=1e-9)
        assert NAMES[variant] == REGISTRY[variant].label
    fastest = min(("retnet", "mamba2", "deltanet"), key=lambda v: direct[v][10])
    assert answer_of("architectures", 1)[2] == NAMES[fastest] == "Mamba-2"
    assert deltanet[-1] < 0.1 and answer_of("architectures", 2)[2] == "almost nothing"


def test_architectures_deltanet_erases_along_its_key_and_rwkv6_is_gla():
    from lineare.app.dashboards.architectures.lesson import gap
    from lineare.app.dashboards.architectures.model import texts
    k = texts()[1][0, 0].numpy()
    values = np.sort(np.linalg.eigvalsh(np.eye(len(k)) - np.outer(k, k)))     # β = 1: 1 − β along k, 1 elsewhere
    assert abs(values[0]) < 1e-9 and np.allclose(values[1:], 1)
    assert answer_of("architectures", 3)[2] == "erases it (0)"
    assert gap("gla") < 1e-12 and min(gap(v) for v in ("retnet", "mamba2", "deltanet")) > 0.05
    assert answer_of("architectures", 4)[2] == "GLA"


# each card's right choice is pinned by a test above that computes it without the card's own `correct`
PINNED = {
    "softmax": ("test_softmax_the_table_the_same_answers_and_a_summary_of_fixed_size",) * 3
    + ("test_softmax_which_order_does_less_work",) * 2,
    "two-bills": ("test_two_bills_the_notebook_outgrows_the_summary_where_the_bytes_say",
                  "test_two_bills_twice_the_text_is_four_times_the_work",
                  "test_two_bills_the_slower_layer_is_read_off_the_times_the_page_shows",
                  "test_two_bills_a_real_models_notebook_against_its_weights"),
    "state": ("test_state_a_column_each_answers_all_four_and_a_crowd_mixes_anna",
              "test_a_sum_mixes_a_changed_number_and_the_correction_replaces_it",
              "test_a_sum_mixes_a_changed_number_and_the_correction_replaces_it",
              "test_state_a_column_each_answers_all_four_and_a_crowd_mixes_anna"),
    "transition": ("test_transition_adding_keeps_the_old_number_and_correcting_gives_the_new",) * 2
    + ("test_transition_forgetting_gives_anna_the_new_number_and_costs_one_other",
       "test_transition_how_many_of_the_three_models_get_everything_right"),
    "memory-fails": ("test_memory_the_bound_leaves_zero_at_d_k_pairs",
                     "test_memory_random_labels_leak_from_the_first_pairs")
    + ("test_memory_perpendicular_labels_and_changed_numbers",) * 3,
    "parallel-recurrent": ("test_parallel_the_three_ways_agree_with_a_direct_loop",
                           "test_parallel_blocks_as_long_as_the_text_are_the_parallel_way",
                           "test_parallel_the_three_ways_agree_with_a_direct_loop",
                           "test_parallel_the_differences_are_rounding"),
    "architectures": ("test_architectures_forgetting_computed_directly",) * 2
    + ("test_architectures_deltanet_erases_along_its_key_and_rwkv6_is_gla",) * 2,
}


def test_every_cards_answer_is_pinned_by_a_direct_computation():
    """A new card, or one moved, fails here until a test computes its answer from the page's numbers."""
    assert {slug: len(tests) for slug, tests in PINNED.items()} == {slug: len(c) for slug, c in LESSONS.items()}
    for tests in PINNED.values():
        assert all(callable(globals().get(name)) for name in tests), tests


# ------------------------------------------------------------- the card on its page, built without a browser

VIEWS = {"softmax": "lineare.app.dashboards.take_away_softmax.view:SoftmaxView",
         "two-bills": "lineare.app.dashboards.two_bills.view:TwoBillsView",
         "state": "lineare.app.dashboards.state_fills_up.view:StateView",
         "transition": "lineare.app.dashboards.transition.view:TransitionView",
         "memory-fails": "lineare.app.dashboards.memory_fails.view:MemoryView",
         "parallel-recurrent": "lineare.app.dashboards.parallel_recurrent.view:FormsView",
         "architectures": "lineare.app.dashboards.architectures.view:ArchitecturesView"}
_STORES = {}


def page_view(slug, number, session):
    """The page's view for card `number`'s settings (its store made once per card: it does not depend on the
    language), as app.shell builds it."""
    import importlib

    module, name = VIEWS[slug].split(":")
    if (slug, number) not in _STORES:
        _STORES[slug, number] = store_for(slug, LESSONS[slug][number - 1])[0]
    store = _STORES[slug, number]
    return getattr(importlib.import_module(module), name)(store=store, session=session), store


def card_on_its_page(slug, number, session=None, lang="en"):
    """(card widget, page view, store) as app.shell builds them for ?lesson=slug&card=number."""
    from lineare.app.lessons import lesson_card
    session = session or Session(language=lang, lesson=slug, card=number)
    view, store = page_view(slug, number, session)
    return lesson_card(session, store, view), view, store


def _strip_future(html_text, t):
    """A token strip as the browser shows it at frame t: the answers under later tokens are not shown."""
    import re
    return re.sub(r'(data-step="(\d+)"[^>]*>(?:(?!data-step).)*?<span class="answer">)(.*?)(</span></div>)',
                  lambda m: m.group(1) + (m.group(3) if int(m.group(2)) <= t else "") + m.group(4), html_text)


def figure_text(figure, frame):
    """What a figure shows in words: titles (a per-frame title at `frame`), axis names and tick labels, notes,
    legend entries, hover labels, and the words its visible series write (their rows at the frame shown)."""
    from bokeh.models import (Axis, GlyphRenderer, HoverTool, IndexFilter, Label, Legend, Text, Title)

    from lineare.app.components.plots import TEXT_TAG
    words = []
    for model in {*figure.select({"type": Title}), figure.title} - {None}:
        if model.visible:
            tags = model.tags or []
            words.append(tags[1][min(frame, len(tags[1]) - 1)] if tags[:1] == [TEXT_TAG] and tags[1] else model.text)
    for axis in figure.select({"type": Axis}):
        if axis.visible:
            words += [axis.axis_label or "", *map(str, (axis.major_label_overrides or {}).values())]
    words += [label.text for label in figure.select({"type": Label}) if label.visible]
    for legend in figure.select({"type": Legend}):
        words += [str(item.label.get("value", "")) if isinstance(item.label, dict) else str(item.label)
                  for item in legend.items if item.visible and legend.visible]
    for tool in figure.select({"type": HoverTool}):
        words += [label for label, _field in (tool.tooltips or [])] if isinstance(tool.tooltips, list) else []
    for renderer in figure.select({"type": GlyphRenderer}):
        if not renderer.visible or not isinstance(renderer.glyph, Text):
            continue
        column = renderer.glyph.text if isinstance(renderer.glyph.text, str) else None
        data = renderer.data_source.data.get(column, []) if column else []
        shown = renderer.view.filter.indices if isinstance(renderer.view.filter, IndexFilter) else range(len(data))
        words += [str(data[i]) for i in shown if i < len(data)]
    return " ".join(str(w).replace("\n", " ") for w in words)


def shown_text(thing, frame=0):
    """The texts a visitor sees of a Panel object at the player's `frame` (its hidden parts left out), the words
    of its pictures included, as plain text."""
    import panel as pn

    from lineare.app.cards import plain
    from lineare.app.components.later import Later
    from lineare.app.components.player import FrameText
    if isinstance(thing, Later):
        return shown_text(thing.__panel__(), frame)
    if isinstance(thing, pn.viewable.Viewer):
        return shown_text(thing.__panel__(), frame)
    if not thing.visible or thing.styles.get("visibility") == "hidden":
        return ""
    if isinstance(thing, FrameText):
        now = thing.frames[min(frame, len(thing.frames) - 1)] if thing.frames else ""
        return plain(_strip_future(thing.html, frame) + " " + now) if thing.html or now else ""
    if isinstance(thing, pn.pane.Bokeh):
        return figure_text(thing.object, frame)
    if hasattr(thing, "objects"):
        return " ".join(shown_text(part, frame) for part in thing.objects)
    text = thing.object if isinstance(getattr(thing, "object", None), str) else ""
    return plain(text) if text else ""


def whole(view):
    """`view` with its sections below the first screen made (app/components/later.py), as a visitor who
    scrolls to them sees it (those of the page's parts too: the two bills' measured times)."""
    import panel as pn

    from lineare.app.components.later import Later

    def make(owner, depth):
        for value in list(vars(owner).values()):
            for thing in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(thing, Later):
                    thing.section()
                elif isinstance(thing, pn.viewable.Viewer) and depth < 2 and not isinstance(thing, Session):
                    make(thing, depth + 1)
    make(view, 0)
    return view


def held(view, card):
    """The Bokeh series a card holds back, and every other part it holds back, from its view's `parts()`."""
    from bokeh.models import GlyphRenderer

    from lineare.app.lessons import parts
    things = parts(view, card.hides)
    return [t for t in things if isinstance(t, GlyphRenderer)], [t for t in things if not isinstance(t, GlyphRenderer)]


def rows(renderer):
    return max((len(column) for column in renderer.data_source.data.values()), default=0)


def act(widget, card, store):
    """What the browser sends when the student acts: a choice, then the player at `at` or a sketch."""
    widget.chosen = 0
    if card.guess is not None:
        widget.guess = [[0.1, 0.2], [0.5, 0.5], [0.9, 0.8]]
    if card.at is not None:
        widget.played = True
    return card.at(store) if card.at else 0


@pytest.mark.parametrize("lang", ["en", "it"])
@pytest.mark.parametrize("slug,number", CARDS)
def test_every_card_holds_its_answer_back_until_the_student_has_acted(slug, number, lang):
    """From each card's declaration: before the action nothing visible on its page (texts, captions, titles,
    legends, hover labels, the words a picture writes) carries the answer, and the series it holds back send no
    numbers; after it, the page's own words for the answer (computed from the store) are there, and every series
    is drawn again (a sketched curve's true line among them). A card that hides nothing fails the first half; one
    that hides too much, or whose answer never shows, the second."""
    card = LESSONS[slug][number - 1]
    with language(lang):
        widget, view, store = card_on_its_page(slug, number, lang=lang)
        whole(view)
        answers = [a for a in card.answer(store) if a]
        series, others = held(view, card)
        assert answers or series, "a card must say what states its answer: page words, or a series it holds back"
        assert set(card.hides) | set(card.look) | set(card.lead) <= set(view.parts()), "a name its page lacks"
        before = shown_text(view, frame=0)
        assert [a for a in answers if a in before] == [], "the answer is on the page before the action"
        assert [r for r in series if rows(r) or r.visible] == [], "a held-back series is sent"
        stand_ins = {r: r.data_source for r in series}
        if card.guess is not None:                     # a live class's projector finds the picture to overlay
            from lineare.app.classroom.projector import describe, guess_figure
            from lineare.app.lessons import parts
            figure, along = guess_figure(card, view)
            assert figure is parts(view, [card.guess.picture])[0] and along == card.guess.along
            assert describe(slug, number, card, figure, along)["guess"]["along"] == along
        widget.chosen = 0                                              # a choice alone answers nothing yet
        if card.at is not None or card.guess is not None:
            assert not widget.acted and [a for a in answers if a in shown_text(view, frame=0)] == []
        frame = act(widget, card, store)
        assert widget.acted
        after = shown_text(view, frame=frame)
        assert [a for a in answers if a not in after] == [], "the answer is not on the page after the action"
        assert [r for r in series if r.data_source is stand_ins[r] or not r.visible] == [], "a series is held back"
        assert any(rows(r) for r in series) or not series
        if card.guess is not None and series:
            truth = np.asarray(card.guess.curve(store)[1], dtype=float)
            drawn = [np.asarray(column, dtype=float) for r in series for column in r.data_source.data.values()
                     if np.asarray(column).dtype.kind in "fiu" and np.ndim(column) == 1]
            assert any(len(y) == len(truth) and np.allclose(y, truth, equal_nan=True) for y in drawn)
        if card.guess is not None:
            assert widget.differ and "{" not in widget.differ                # where the sketch and the truth part


@pytest.mark.parametrize("slug", list(LESSONS))
def test_the_free_laboratory_holds_nothing_back(slug):
    """The same pages without `lesson=`: every part a card of the page may hold back is drawn, each series with
    its numbers."""
    from bokeh.models import GlyphRenderer

    from lineare.app.components.text import Explanation
    from lineare.app.lessons import parts
    with language("en"):
        for number, card in enumerate(LESSONS[slug], 1):
            view, _store = page_view(slug, number, Session(language="en"))
            whole(view)
            series = [t for t in parts(view, card.hides) if isinstance(t, GlyphRenderer)]
            assert any(rows(r) for r in series) or not series
            for thing in parts(view, card.hides):
                if isinstance(thing, Explanation):
                    assert not thing.veiled
                elif isinstance(thing, GlyphRenderer):
                    assert thing.visible, (number, thing)
                else:
                    assert thing.visible, (number, thing)


def test_a_sketch_is_drawn_where_the_browser_put_it_and_checked():
    """A sketch arrives as fractions of the axes: drawn in the picture's units (log axes too), and compared with the
    true line; a sketch out of the axes, too long or not numbers is refused before it reaches the card."""
    from lineare.app.guess import differ, to_data
    with language("en"):
        widget, view, store = card_on_its_page("softmax", 4)
        figure = view.cost.figure
        (low, high), (bottom, top) = (figure.x_range.start, figure.x_range.end), (figure.y_range.start,
                                                                                  figure.y_range.end)
        x, y = to_data([[0, 0], [0.5, 1], [1, 0.5]], figure)
        np.testing.assert_allclose(x, [low, (low * high) ** 0.5, high])              # a logarithmic axis
        np.testing.assert_allclose(y, [bottom, top, (bottom * top) ** 0.5])
        truth = LESSONS["softmax"][3].guess.curve(store)
        assert "follows the real one" in differ(np.stack(to_fractions(figure, *truth), 1), figure, *truth)
        assert "differ most" in differ([[0, 0.9], [1, 0.9]], figure, *truth)
        for bad in ([[0, 0]], [[0, 0], [1.5, 0]], [[0, 0], [float("nan"), 0]], [[0, 0]] * 65, [[0, 0], [1, "a"]]):
            with pytest.raises(ValueError):
                widget.guess = bad
        assert widget.guess == [] and not widget.acted
        widget.chosen = 1
        widget.guess = [[0, 0.1], [1, 0.9]]
        sketch = [r for r in figure.renderers if "x" in r.data_source.data and rows(r) == 2]
        assert sketch and widget.acted
        with pytest.raises(ValueError):
            widget.chosen = len(LESSONS["softmax"][3].choices)                 # a choice the card lacks


def to_fractions(figure, x, y):
    import math
    fx = (np.log10(x) - math.log10(figure.x_range.start)) / (math.log10(figure.x_range.end) -
                                                             math.log10(figure.x_range.start))
    fy = (np.log10(y) - math.log10(figure.y_range.start)) / (math.log10(figure.y_range.end) -
                                                             math.log10(figure.y_range.start))
    return np.clip(fx, 0, 1), np.clip(fy, 0, 1)


def test_a_cards_links_follow_the_pages_level():
    session = Session(language="it", level="elementare", lesson="state", card=2)
    with language("it"):
        widget, _view, _store = card_on_its_page("state", 2, session)
    hrefs = lambda: [widget.words[k] for k in ("previous_href", "next_href", "back_href")]
    assert all("lang=it&level=elementare" in href for href in hrefs())
    session.level = "superiore"                                    # switched in place, no reload
    assert all("lang=it&level=superiore" in href and "elementare" not in href for href in hrefs())
    present = Session(language="en", level="superiore", present=True, lesson="state", card=2)
    with language("en"):
        widget, _view, _store = card_on_its_page("state", 2, present)
    assert all("lang=en&level=superiore" in href and href.endswith("&present=1") for href in hrefs())


def test_a_card_says_when_the_settings_leave_its_own():
    with language("en"):
        widget, _view, store = card_on_its_page("transition", 3)
    assert not widget.stale
    store.alpha = 0.9                                              # the knob the observation depends on
    assert widget.stale and "back_href" in widget.words and "card=3" in widget.words["back_href"]
    store.alpha = float(LESSONS["transition"][2].setup["alpha"])   # back to the card's value
    assert not widget.stale


def test_the_state_strip_the_right_choice_and_the_observation_agree():
    # card 2: the sum holds 21 and 99 added, a tie: the strip says so, the right choice is the mix, and the
    # observation says why; card 3: DeltaNet answers 99
    for number, shown, choice, said in ((2, "tie: 21 / 99", "a mix of both, counted as wrong", "A tie"),
                                        (3, "99", "99", "It answers 99")):
        card = LESSONS["state"][number - 1]
        store, _v = store_for("state", card)
        t = next(i for i, token in enumerate(store.result.tokens) if token.kind == "ask" and token.key == "Anna")
        with language("en"):
            from lineare.app.dashboards.state_fills_up.texts import said as strip_word, token_strip
            assert strip_word(store.result.answers[t]) == shown and f"{shown} {'✓' if number == 3 else '✗'}" in \
                token_strip(store.result)
            assert card.choices[card.correct(store)] == choice and card.observe(store).startswith(said)
