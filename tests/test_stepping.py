"""Token-by-token stepping: same outputs as forward, records that hold what engine/README.md lists."""
import numpy as np
import pytest
import torch

from lineare.engine.ops import forward
from lineare.engine.stepping import StepRecord, init_state, run, step, transition
from inputs import VARIANTS, make_inputs, rel_rms


@pytest.mark.parametrize("variant", VARIANTS)
def test_stepping_matches_forward(variant):
    q, k, v, gates = make_inputs(variant, B=2, T=13, H=3, strong=True)
    o_ref, s_ref = forward(variant, q, k, v, form="chunked", chunk_size=4, **gates)
    o, s, records = run(variant, q, k, v, **gates)
    assert rel_rms(o, o_ref) <= 1e-10
    for x, ref in zip(s if isinstance(s, tuple) else (s,), s_ref if isinstance(s_ref, tuple) else (s_ref,)):
        assert rel_rms(x, ref) <= 1e-10
    assert len(records) == 13 and all(isinstance(r, StepRecord) for r in records)
    np.testing.assert_allclose(records[-1].output, o[:, -1].numpy(), atol=1e-12)


def test_records_hold_plain_arrays_and_the_delta_correction():
    q, k, v, gates = make_inputs("deltanet", B=1, T=5, H=2, d_k=4, d_v=3)
    state = init_state("deltanet", heads=2, d_k=4, d_v=3, dtype=torch.float64)
    previous = state.clone()
    for t in range(5):
        o, state, rec = step("deltanet", state, q[:, t], k[:, t], v[:, t], beta=gates["beta"][:, t])
        for name in ("output", "state", "write", "beta", "prediction", "target", "error"):
            assert isinstance(getattr(rec, name), np.ndarray), name
        prediction = torch.einsum("bhvk,bhk->bhv", previous, k[:, t]).numpy()
        np.testing.assert_allclose(rec.prediction, prediction, atol=1e-12)
        np.testing.assert_allclose(rec.target, v[:, t].numpy())
        np.testing.assert_allclose(rec.error, v[:, t].numpy() - prediction, atol=1e-12)
        # the delta rule moves S by β · error · kᵀ
        change = rec.beta[..., None, None] * rec.error[..., :, None] * k[:, t].numpy()[..., None, :]
        np.testing.assert_allclose(rec.state - previous.numpy(), change, atol=1e-12)
        previous = state.clone()


@pytest.mark.parametrize("variant,decay_shape", [("retnet", (1, 2)), ("mamba2", (1, 2)), ("gla", (1, 2, 8)),
                                                 ("rwkv7", (1, 2, 8)), ("mlstm", (1, 2)), ("linear", None)])
def test_records_carry_the_transition(variant, decay_shape):
    q, k, v, gates = make_inputs(variant, B=1, T=3, H=2, d_k=8, d_v=6)
    _, _, records = run(variant, q, k, v, **gates)
    rec = records[1]
    if decay_shape is None:
        assert rec.decay is None
    else:
        assert rec.decay.shape == decay_shape and ((rec.decay > 0) & (rec.decay <= 1)).all()
    if variant == "rwkv7":
        np.testing.assert_allclose(rec.a, gates["a"][:, 1].numpy())
        np.testing.assert_allclose(rec.b, gates["b"][:, 1].numpy())
    if variant == "mlstm":
        assert {"m", "n", "forget_stabilized", "input_stabilized"} <= set(rec.extras)


def test_kv_cache_grows_linearly_while_states_stay_flat():
    B, H, d_k, d_v, T = 1, 2, 8, 6, 20
    per_token = B * H * (d_k + d_v) * 4                                   # one key and one value, float32
    for variant in VARIANTS:
        q, k, v, gates = make_inputs(variant, B=B, T=T, H=H, d_k=d_k, d_v=d_v, dtype=torch.float32)
        _, _, records = run(variant, q, k, v, **gates)
        kv = [r.kv_cache_bytes for r in records]
        fixed = [r.state_bytes for r in records]
        if variant == "softmax":
            assert kv == [per_token * (t + 1) for t in range(T)]
            assert set(fixed) == {0}
            assert records[-1].extras["attention"].shape == (B, H, T)
        else:
            assert set(kv) == {0}
            assert len(set(fixed)) == 1 and fixed[0] >= B * H * d_v * d_k * 4


def test_step_rejects_bad_input():
    state = init_state("gla", heads=2, d_k=4, d_v=3)
    q = k = torch.randn(1, 2, 4)
    v = torch.randn(1, 2, 3)
    with pytest.raises(ValueError, match="needs gate g"):
        step("gla", state, q, k, v)
    with pytest.raises(ValueError, match="shape"):
        step("gla", state, q, k, v, g=-torch.rand(1, 2, 5))
    with pytest.raises(ValueError, match="initial_state"):
        step("gla", torch.zeros(1, 2, 4, 4), q, k, v, g=-torch.rand(1, 2, 4))
    with pytest.raises(ValueError, match="unknown variant"):
        step("gru", state, q, k, v)


@pytest.mark.parametrize("variant", [v for v in VARIANTS if v not in ("softmax", "mlstm")])
def test_transition_and_write_rebuild_every_state(variant):
    # S_t = S_{t-1} A_t + write_t, with A_t from the record alone, on strong gates and an odd length
    q, k, v, gates = make_inputs(variant, B=2, T=7, H=3, strong=True)
    _o, _s, records = run(variant, q, k, v, **gates)
    previous = np.zeros_like(records[0].state)
    for record in records:
        A = transition(record)                                                  # [B,H,d_k,d_k]
        np.testing.assert_allclose(previous @ A + record.write, record.state, atol=1e-10)
        previous = record.state
    if variant in ("deltanet", "gated_deltanet"):      # k scaled by α(1 − β|k|²), directions ⟂ k by α
        record = records[-1]
        k_t, beta = record.key[0, 0], float(record.beta[0, 0])
        alpha = 1.0 if record.decay is None else float(record.decay[0, 0])
        np.testing.assert_allclose(k_t @ A[0, 0], alpha * (1 - beta * (k_t @ k_t)) * k_t, atol=1e-10)
        across = np.linalg.svd(k_t[None, :])[2][1]                         # a unit vector ⟂ k
        np.testing.assert_allclose(across @ A[0, 0], alpha * across, atol=1e-10)


@pytest.mark.parametrize("variant", [v for v in VARIANTS if v not in ("softmax", "mlstm", "rwkv6")])
def test_records_carry_the_query_the_read_out_used(variant):
    # o_t = S_t q_t with the scaled query of the record (RWKV-6 reads S_{t-1} plus its bonus u, below)
    q, k, v, gates = make_inputs(variant, B=1, T=4, H=2, d_k=8, d_v=6)
    _o, _s, records = run(variant, q, k, v, scale=0.5, **gates)
    for t, record in enumerate(records):
        np.testing.assert_allclose(record.query, 0.5 * q[:, t].numpy(), atol=1e-12)
        if record.extras.get("z") is None:
            np.testing.assert_allclose(record.output, np.einsum("bhvk,bhk->bhv", record.state, record.query),
                                       atol=1e-10)


def test_rwkv6_records_its_bonus():
    q, k, v, gates = make_inputs("rwkv6", B=1, T=3, H=2, d_k=8, d_v=6)
    _o, _s, records = run("rwkv6", q, k, v, **gates)
    u = records[2].extras["u"]
    np.testing.assert_allclose(u, gates["u"].numpy())
    before, record = records[1].state, records[2]
    bonus = ((u * record.key * record.query).sum(-1))[..., None] * record.target               # [B,H,d_v]
    np.testing.assert_allclose(record.output, np.einsum("bhvk,bhk->bhv", before, record.query) + bonus, atol=1e-10)
