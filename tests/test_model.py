"""TinyLM: shapes, step-by-step generation equals the full forward, a few steps of training help."""
import pytest
import torch

from lineare.engine import tasks
from lineare.engine.layers import LAYERS
from lineare.engine.model import ModelConfig, TinyLM
from lineare.engine.stepping import StepRecord
from lineare.engine.train import masked_loss, optimizer_for

VOCAB, T = 32, 13


def tiny(variant, dtype=torch.float32, seed=0, **options):
    torch.manual_seed(seed)
    config = ModelConfig(variant=variant, vocab_size=VOCAB, d_model=16, n_layers=2, n_heads=2, chunk_size=4,
                         **options)
    return TinyLM(config).to(dtype)


def tokens(batch=2, seed=0):
    return torch.randint(0, VOCAB, (batch, T), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("variant", LAYERS)
def test_step_by_step_logits_equal_full_forward(variant):
    model = tiny(variant, torch.float64, mlp=variant in ("deltanet", "softmax"))
    x = tokens()
    with torch.no_grad():
        full = model(x)
    cache, steps = None, []
    for t in range(T):
        logits, cache, records = model.step(x[:, t], cache)
        steps.append(logits)
    assert full.shape == (2, T, VOCAB)
    assert torch.allclose(torch.stack(steps, 1), full, rtol=1e-9, atol=1e-10)
    assert len(records) == 2 and all(isinstance(r, StepRecord) for r in records)
    assert records[0].output.shape == (2, 2, 8)                   # [B, heads, d_v]


def test_records_show_kv_cache_growth_for_softmax_only():
    for variant, grows in (("softmax", True), ("gla", False)):
        model, x = tiny(variant), tokens(batch=1)
        cache, sizes = None, []
        for t in range(5):
            _, cache, records = model.step(x[:, t], cache)
            sizes.append(records[0].kv_cache_bytes + records[0].state_bytes)
        assert (sizes[-1] > sizes[0]) == grows
        assert len(set(sizes)) == (5 if grows else 1)


def test_shapes_and_config_defaults():
    model = tiny("mamba2")
    assert model.config.d_k == 8 and model.config.d_v == 8
    logits, states = model(tokens(batch=3), return_states=True)
    assert logits.shape == (3, T, VOCAB) and len(states) == 2
    assert states[0].shape == (3, 2, 8, 8)                          # [B, H, d_v, d_k]
    custom = ModelConfig(variant="gla", d_model=32, n_heads=2, d_k=4, d_v=12)
    assert TinyLM(custom)(tokens()).shape == (2, T, 256)


@pytest.mark.parametrize("bad", [{"variant": "transformer"}, {"d_model": 30, "n_heads": 4}, {"n_layers": 0},
                                 {"feature_map": "cosine"}, {"d_k": 0}, {"vocab_size": 2.5}])
def test_config_rejects_bad_values(bad):
    with pytest.raises(ValueError):
        ModelConfig(**bad)


def test_config_round_trips_through_dict():
    config = ModelConfig(variant="linear", feature_map="relu", normalize=True, mlp=True)
    assert ModelConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ValueError, match="unknown model config keys"):
        ModelConfig.from_dict({**config.to_dict(), "dropout": 0.1})


@pytest.mark.parametrize("variant", ["deltanet", "softmax", "mlstm"])
def test_a_few_training_steps_reduce_the_loss(variant):
    model = tiny(variant)
    inputs, targets = tasks.mqar(vocab_size=VOCAB, seq_len=16, num_pairs=2, num_examples=32, seed=0)
    optimizer = optimizer_for(model, lr=1e-2, weight_decay=0.0)
    with torch.no_grad():
        before = masked_loss(model, inputs, targets).item()
    for _ in range(15):
        loss = masked_loss(model, inputs, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        after = masked_loss(model, inputs, targets).item()
    assert after < before - 0.3, (before, after)


def test_masked_loss_scores_only_queries():
    model = tiny("deltanet")
    inputs, targets = tasks.mqar(vocab_size=VOCAB, seq_len=16, num_pairs=2, num_examples=4, seed=0)
    logits = model(inputs)
    scored = targets != tasks.IGNORE
    expected = torch.nn.functional.cross_entropy(logits[scored], targets[scored])
    assert torch.allclose(masked_loss(model, inputs, targets), expected)
