"""engine.tasks: the MQAR generator and the capacity data (engine/README.md, "Tasks and checkpoints")."""
import pytest
import torch

from lineare.engine.tasks import IGNORE, capacity_data, mqar, mqar_mixture

V, L, K, N = 64, 64, 8, 200


@pytest.fixture(scope="module")
def batch():
    return mqar(vocab_size=V, seq_len=L, num_pairs=K, num_examples=N, seed=0)


def test_shapes_and_dtypes(batch):
    inputs, targets = batch
    assert inputs.shape == targets.shape == (N, L)
    assert inputs.dtype == targets.dtype == torch.int64
    assert inputs.min() >= 0 and inputs.max() < V


def test_context_keys_and_values_distinct_and_in_range(batch):
    inputs, _ = batch
    keys, values = inputs[:, 0:2 * K:2], inputs[:, 1:2 * K:2]
    assert ((keys >= 1) & (keys < V // 2)).all()
    assert ((values >= V // 2) & (values < V)).all()
    for row_k, row_v in zip(keys.tolist(), values.tolist()):
        assert len(set(row_k)) == K and len(set(row_v)) == K
    assert (_targets_in_context(batch) == IGNORE).all()


def _targets_in_context(batch):
    return batch[1][:, :2 * K]


def test_every_key_asked_once_with_its_paired_value(batch):
    inputs, targets = batch
    for x, y in zip(inputs.tolist(), targets.tolist()):
        pairs = dict(zip(x[0:2 * K:2], x[1:2 * K:2]))
        asked = [t for t in range(L) if y[t] != IGNORE]
        assert len(asked) == K
        assert sorted(x[t] for t in asked) == sorted(pairs)                  # each key asked once
        for t in asked:
            assert t >= 2 * K and (t - 2 * K) % 2 == 0                        # at an even offset of the rest
            assert y[t] == pairs[x[t]]                                        # target = its paired value
            assert x[t] in x[:t]                                              # the key appeared before
        rest = [x[t] for t in range(2 * K, L) if y[t] == IGNORE]
        assert all(tok == 0 for tok in rest)                                  # filler is 0


def test_random_filler_keeps_queries_and_targets(batch):
    inputs, targets = mqar(vocab_size=V, seq_len=L, num_pairs=K, num_examples=N, seed=0, random_filler=True)
    assert torch.equal(targets, batch[1])
    asked = targets != IGNORE
    assert torch.equal(inputs[asked], batch[0][asked])
    assert torch.equal(inputs[:, :2 * K], batch[0][:, :2 * K])
    filler = inputs[:, 2 * K:][~asked[:, 2 * K:]]
    assert (filler != 0).float().mean() > 0.9 and filler.max() < V


def test_deterministic_by_seed(batch):
    again = mqar(vocab_size=V, seq_len=L, num_pairs=K, num_examples=N, seed=0)
    other = mqar(vocab_size=V, seq_len=L, num_pairs=K, num_examples=N, seed=1)
    assert torch.equal(again[0], batch[0]) and torch.equal(again[1], batch[1])
    assert not torch.equal(other[0], batch[0])


def test_power_law_puts_queries_early():
    Lp, Kp = 256, 4
    inputs, targets = mqar(vocab_size=64, seq_len=Lp, num_pairs=Kp, num_examples=2000, seed=3)
    slot = (torch.nonzero(targets != IGNORE)[:, 1] - 2 * Kp) // 2          # slot index 0 … S−1
    S = (Lp - 2 * Kp) // 2
    early = (slot < S // 4).float().mean().item()
    assert early > 0.5                                                       # uniform would give ≈ 0.25
    assert slot.max().item() > S // 2                                        # a long tail reaches late slots
    _, flat = mqar(vocab_size=64, seq_len=Lp, num_pairs=Kp, num_examples=2000, seed=3, power_a=1.0)
    flat_slot = (torch.nonzero(flat != IGNORE)[:, 1] - 2 * Kp) // 2
    assert abs((flat_slot < S // 4).float().mean().item() - 0.25) < 0.05   # a = 1 is uniform


def test_tight_fit_uses_every_slot():
    inputs, targets = mqar(vocab_size=10, seq_len=16, num_pairs=4, num_examples=20, seed=0)
    assert ((targets != IGNORE).sum(1) == 4).all()
    assert (targets[:, 8::2] != IGNORE).all()


def test_mixture_of_pair_counts():
    inputs, targets = mqar_mixture(vocab_size=128, seq_len=64, num_examples=100, seed=0)
    counts = (targets != IGNORE).sum(1)
    assert sorted(set(counts.tolist())) == [1, 2, 4, 8, 16]
    assert all((counts == k).sum() == 20 for k in (1, 2, 4, 8, 16))
    assert len(set(counts[:10].tolist())) > 1                                 # shuffled, not in blocks
    for x, y in zip(inputs.tolist(), targets.tolist()):
        k = sum(t != IGNORE for t in y)
        pairs = dict(zip(x[0:2 * k:2], x[1:2 * k:2]))
        assert all(y[t] == pairs[x[t]] for t in range(64) if y[t] != IGNORE)
    again = mqar(vocab_size=128, seq_len=64, num_pairs=[1, 2, 4, 8, 16], num_examples=100, seed=0)
    assert torch.equal(again[0], inputs)


@pytest.mark.parametrize("kwargs, message", [
    (dict(vocab_size=10, num_pairs=5), "distinct keys"),
    (dict(seq_len=31, num_pairs=8), "too short"),
    (dict(num_pairs=0), "positive integer"),
    (dict(num_examples=0), "positive integer"),
    (dict(seq_len=-4), "positive integer"),
    (dict(vocab_size=64.0), "positive integer"),
    (dict(num_pairs=True), "positive integer"),
    (dict(num_pairs=[]), "empty"),
    (dict(num_pairs=[2, 20]), "too short"),
    (dict(seed=-1), "seed"),
    (dict(seed=1.5), "seed"),
    (dict(power_a=0), "power_a"),
    (dict(random_filler="yes"), "random_filler"),
])
def test_bad_arguments(kwargs, message):
    args = dict(vocab_size=V, seq_len=L, num_pairs=K, num_examples=4, seed=0) | kwargs
    with pytest.raises(ValueError, match=message):
        mqar(**args)


# ---------------------------------------------------------------------------- capacity data

@pytest.mark.parametrize("kind", ["orthogonal", "random", "correlated"])
def test_capacity_keys(kind):
    d = capacity_data(num_pairs=16, d_k=16 if kind == "orthogonal" else 32, keys=kind, seed=0)
    assert d.keys.shape == d.queries.shape and d.values.shape == (16, 16)
    assert torch.allclose(d.keys.norm(dim=-1), torch.ones(16, dtype=torch.float64))
    gram = d.queries @ d.queries.T
    off = gram[~torch.eye(16, dtype=torch.bool)]
    if kind == "orthogonal":
        assert off.abs().max() < 1e-12
    elif kind == "correlated":
        assert abs(off.mean().item() - 0.5) < 0.1
    else:
        assert off.abs().mean() < 0.3
    assert torch.equal(d.targets, torch.arange(16))
    assert torch.equal(d.target_values, torch.eye(16, dtype=torch.float64))


def test_capacity_repeat_latest_value_wins():
    d = capacity_data(num_pairs=8, d_k=8, keys="orthogonal", repeat=5, seed=1)
    assert d.keys.shape == (13, 8) and d.values.shape == (13, 13) and d.queries.shape == (8, 8)
    for i in range(8):
        writes = [w for w in range(13) if torch.equal(d.keys[w], d.queries[i])]
        assert d.targets[i].item() == max(writes)
    assert (d.targets >= 8).sum() == 5                                        # 5 distinct keys rewritten
    again = capacity_data(num_pairs=8, d_k=8, keys="orthogonal", repeat=5, seed=1)
    assert torch.equal(again.keys, d.keys) and torch.equal(again.targets, d.targets)


@pytest.mark.parametrize("kwargs, message", [
    (dict(num_pairs=9, d_k=8, keys="orthogonal"), "orthogonal"),
    (dict(keys="gaussian"), "unknown keys"),
    (dict(num_pairs=0), "num_pairs"),
    (dict(d_k=0), "d_k"),
    (dict(repeat=-1), "repeat"),
    (dict(d_k=1, keys="correlated"), "d_k ≥ 2"),
    (dict(seed=None), "seed"),
])
def test_capacity_bad_arguments(kwargs, message):
    args = dict(num_pairs=4, d_k=8, keys="random", seed=0) | kwargs
    with pytest.raises(ValueError, match=message):
        capacity_data(**args)
