"""Lessons: every card opens on settings where its question has an answer the model computes, the right
prediction is read off the run (checked here against a direct computation), and a card lives in the URL."""
import numpy as np
import pytest

from app import mechanism
from app.dashboards import DASHBOARDS
from app.dashboards.architectures.model import ArchitecturesStore
from app.dashboards.memory_fails.model import MemoryStore
from app.dashboards.parallel_recurrent.model import FormsStore
from app.dashboards.state_fills_up.model import StateStore
from app.dashboards.state_fills_up.view import read_store_query
from app.dashboards.take_away_softmax.model import SoftmaxStore
from app.dashboards.transition.model import TransitionStore
from app.dashboards.two_bills.calculator import CalculatorStore
from app.dashboards.two_bills.model import GenerationStore
from app.components.player import Player
from app.i18n import _, language
from app.lessons import LESSONS, TITLES, apply_setup, card_of, neighbours
from app.session import Session
from app.urlstate import read_query

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
    from app.dashboards.take_away_softmax.model import elu_plus_one, sentence_vectors
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
    from app.dashboards.transition.model import PRESETS
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
    from app.dashboards.memory_fails.model import TRIALS
    from engine import tasks
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
    from app.dashboards.memory_fails.model import dense_values
    from engine import tasks
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
    from app.dashboards.parallel_recurrent.model import make_inputs
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
    from engine.ops import FORMS, forward
    from app.dashboards.parallel_recurrent.model import make_inputs
    q, k, v, gates = make_inputs(store.variant, store.length, store.seed, store.alpha)      # float64
    outputs = [forward(store.variant, q, k, v, form=form, chunk_size=store.chunk_size, **gates)[0] for form in FORMS]
    assert max(float((a - outputs[0]).abs().max()) for a in outputs) < 1e-12
    assert answer == "shrink to almost nothing"


def test_architectures_forgetting_computed_directly():
    from app.dashboards.architectures.lesson import NAMES
    from app.dashboards.architectures.model import RETNET_GAMMA, forgetting_curve, texts
    from app.variants import REGISTRY
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
    from app.dashboards.architectures.lesson import gap
    from app.dashboards.architectures.model import texts
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

VIEWS = {"softmax": "app.dashboards.take_away_softmax.view:SoftmaxView",
         "two-bills": "app.dashboards.two_bills.view:TwoBillsView",
         "state": "app.dashboards.state_fills_up.view:StateView",
         "transition": "app.dashboards.transition.view:TransitionView",
         "memory-fails": "app.dashboards.memory_fails.view:MemoryView",
         "parallel-recurrent": "app.dashboards.parallel_recurrent.view:FormsView"}


def card_on_its_page(slug, number, session=None):
    """(card widget, page view, store) as app.shell builds them for ?lesson=slug&card=number."""
    import importlib

    from app.lessons import lesson_card
    module, name = VIEWS[slug].split(":")
    session = session or Session(language="en", lesson=slug, card=number)
    store, _values = store_for(slug, LESSONS[slug][number - 1])
    view = getattr(importlib.import_module(module), name)(store=store, session=session)
    return lesson_card(session, store, view), view, store


def shown_text(thing):
    """The texts a visitor sees of a Panel object (its hidden parts left out), Bokeh notes included."""
    import panel as pn
    from bokeh.models import Label

    from app.components.player import FrameText
    if isinstance(thing, pn.viewable.Viewer):
        return shown_text(thing.__panel__())
    if not thing.visible or thing.styles.get("visibility") == "hidden":
        return ""
    if isinstance(thing, FrameText):
        return thing.html + (thing.frames[min(thing.value, len(thing.frames) - 1)] if thing.frames else "")
    if isinstance(thing, pn.pane.Bokeh):
        return " ".join(label.text.replace("\n", " ") for label in thing.object.select(Label) if label.visible)
    if hasattr(thing, "objects"):
        return " ".join(shown_text(part) for part in thing.objects)
    return thing.object if isinstance(getattr(thing, "object", None), str) else ""


def whole(view):
    """`view` with its sections below the first screen made (app/components/later.py), as a visitor who
    scrolls to them sees it."""
    from app.components.later import Later

    for value in vars(view).values():
        for thing in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(thing, Later):
                thing.section()
    return view


# (slug, card): what on the page states the card's answer, written for the card's own run
GIVEN_AWAY = {("softmax", 2): lambda store: ["The same numbers", "equals the answer from the table"],
              ("softmax", 3): lambda store: ["the summary never grows"],
              ("two-bills", 1): lambda store: [f"from token {store.result.crossing} the cache is bigger",
                                               f"from token {store.result.crossing} on"],
              ("two-bills", 2): lambda store: ["twice the text is four times the work"],
              ("two-bills", 3): lambda store: ["Typical time per token"],
              ("two-bills", 4): lambda store: ["The weights of Llama-3.1-8B take 16.1 GB", "outgrows them"],
              ("state", 1): lambda store: ["Answer for"],          # the read-out reads back a written number
              ("state", 2): lambda store: ["Answer for"],
              ("state", 3): lambda store: ["new information replaces the old", "Answer for"],
              ("state", 4): lambda store: ["Answer for"],
              ("parallel-recurrent", 1): lambda store: ["the strips are the same, up to rounding",
                                                        "they look the same, because they are the same"],
              ("parallel-recurrent", 3): lambda store: ["they look the same, because they are the same"],
              ("parallel-recurrent", 4): lambda store: ["float64", "what is left is rounding"],
              ("memory-fails", 1): lambda store: ["stays at zero up to 16 pairs", "(16 here, dotted line)"],
              **{("memory-fails", n): lambda store: ["stays at zero up to 16 pairs", "of the answers are right"]
                 for n in (2, 3, 4, 5)}}


@pytest.mark.parametrize("slug,number", list(GIVEN_AWAY))
def test_nothing_on_the_page_gives_the_answer_away_before_a_choice(slug, number):
    with language("en"):
        widget, view, store = card_on_its_page(slug, number)
        answers = GIVEN_AWAY[slug, number](store)
        before = shown_text(whole(view))
        assert [a for a in answers if a in before] == []
        widget.chosen = 0                                          # the browser's choice comes back
        after = shown_text(view)
        assert [a for a in answers if a not in after] == []
    # the free laboratory keeps its texts
    with language("en"):
        module, name = VIEWS[slug].split(":")
        import importlib
        free = getattr(importlib.import_module(module), name)(store=store_for(slug, LESSONS[slug][number - 1])[0],
                                                             session=Session(language="en"))
        assert [a for a in answers if a not in shown_text(whole(free))] == []


@pytest.mark.parametrize("number", [1, 2, 3])
def test_the_transition_cards_bring_up_their_pictures_and_hold_the_answers_back(number):
    """Cards 1-3 ask what a question gets: the answers under the pictures («Anna?» 99 ✓…) and the chart's
    colours and dots wait for a choice, and the pictures, under the first screen at 1366 × 768, are marked
    for the card to bring up."""
    with language("en"):
        widget, view, store = card_on_its_page("transition", number)
        anna = next(q for q in store.knob.recall.questions if q.token.key == "Anna")
        assert widget.look and "lesson-look" in view.picture_cards[2].css_classes
        assert anna.answer not in shown_text(view.picture_cards[2])
        # the chart's colours and dots show which number each question gets: neutral until a choice
        assert not view.recall.image.visible and not view.recall.dots.visible
        widget.chosen = 0
        assert f"{anna.answer} {'✓' if anna.right else '✗'}" in shown_text(view.picture_cards[2])
        assert view.recall.image.visible and view.recall.dots.visible


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
            from app.dashboards.state_fills_up.texts import said as strip_word, token_strip
            assert strip_word(store.result.answers[t]) == shown and f"{shown} {'✓' if number == 3 else '✗'}" in \
                token_strip(store.result)
            assert card.choices[card.correct(store)] == choice and card.observe(store).startswith(said)
