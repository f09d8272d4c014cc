"""Bad input gets a ValueError or TypeError that names the problem."""
import math

import pytest
import torch

from lineare.engine.ops import forward
from inputs import make_inputs


def inputs(variant="gla", **kw):
    return make_inputs(variant, B=1, T=5, H=2, d_k=4, d_v=3, dtype=torch.float32, **kw)


def test_unknown_variant_and_form():
    q, k, v, _ = inputs("linear")
    with pytest.raises(ValueError, match="unknown variant 'mamba3'"):
        forward("mamba3", q, k, v, form="chunked")
    with pytest.raises(ValueError, match="unknown form 'fast'"):
        forward("linear", q, k, v, form="fast")


def test_missing_and_extra_gates():
    q, k, v, gates = inputs("gated_deltanet")
    with pytest.raises(ValueError, match="needs gate beta"):
        forward("gated_deltanet", q, k, v, form="chunked", g=gates["g"])
    with pytest.raises(ValueError, match="takes no gate u"):
        forward("gated_deltanet", q, k, v, form="chunked", u=torch.zeros(2, 4), **gates)
    with pytest.raises(ValueError, match="takes no gate g"):
        forward("linear", q, k, v, form="chunked", g=gates["g"])
    with pytest.raises(ValueError, match="normalize applies to variant 'linear' only"):
        forward("deltanet", q, k, v, form="chunked", normalize=True, beta=gates["beta"])
    with pytest.raises(TypeError, match="normalize must be True or False"):
        forward("linear", q, k, v, form="chunked", normalize="yes")


def test_wrong_shapes():
    q, k, v, gates = inputs("gla")
    with pytest.raises(ValueError, match=r"k has shape \(1, 5, 2, 3\), expected \(1, 5, 2, 4\)"):
        forward("gla", q, k[..., :3], v, form="chunked", **gates)
    with pytest.raises(ValueError, match="v has shape"):
        forward("gla", q, k, v[:, :4], form="chunked", **gates)
    with pytest.raises(ValueError, match="g has shape"):
        forward("gla", q, k, v, form="chunked", g=gates["g"][..., 0])
    with pytest.raises(ValueError, match="4 dimensions"):
        forward("gla", q[0], k, v, form="chunked", **gates)
    with pytest.raises(ValueError, match="empty input"):
        forward("gla", q[:, :0], k[:, :0], v[:, :0], form="chunked", g=gates["g"][:, :0])


def test_wrong_dtypes_and_types():
    q, k, v, gates = inputs("linear")
    with pytest.raises(ValueError, match="float32 or float64"):
        forward("linear", q.half(), k.half(), v.half(), form="chunked")
    with pytest.raises(ValueError, match="k has dtype torch.float64"):
        forward("linear", q, k.double(), v, form="chunked")
    with pytest.raises(TypeError, match="v must be a torch.Tensor"):
        forward("linear", q, k, v.numpy(), form="chunked")
    with pytest.raises(ValueError, match="chunk_size must be a positive integer"):
        forward("linear", q, k, v, form="chunked", chunk_size=0)
    with pytest.raises(ValueError, match="chunk_size"):
        forward("linear", q, k, v, form="chunked", chunk_size=2.5)
    for scale in (0, -1.0, math.nan, math.inf, "big"):
        with pytest.raises(ValueError, match="scale must be a positive finite number"):
            forward("linear", q, k, v, form="chunked", scale=scale)


def test_mismatched_devices():
    q, k, v, _ = inputs("linear")
    with pytest.raises(ValueError, match="meta"):
        forward("linear", q, k.to("meta"), v, form="chunked")


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_inputs(bad):
    q, k, v, gates = inputs("mamba2")
    q2 = q.clone()
    q2[0, 2, 1, 0] = bad
    with pytest.raises(ValueError, match="q contains NaN or infinite values"):
        forward("mamba2", q2, k, v, form="chunked", **gates)
    g = gates["g"].clone()
    g[0, 1, 0] = bad if bad != math.inf else math.nan
    with pytest.raises(ValueError, match="g"):
        forward("mamba2", q, k, v, form="chunked", g=g)


def test_positive_log_decay_is_rejected():
    q, k, v, gates = inputs("retnet")
    with pytest.raises(ValueError, match="log decays and must be ≤ 0"):
        forward("retnet", q, k, v, form="parallel", g=-gates["g"] + 0.1)


def test_bad_initial_states():
    q, k, v, gates = inputs("mlstm")
    with pytest.raises(TypeError, match="MLSTMState"):
        forward("mlstm", q, k, v, form="chunked", initial_state=torch.zeros(1, 2, 3, 4), **gates)
    with pytest.raises(ValueError, match=r"initial_state.m has shape"):
        forward("mlstm", q, k, v, form="chunked", initial_state=(torch.zeros(1, 2, 3, 4), torch.zeros(1, 2, 4),
                                                                 torch.zeros(1, 3)), **gates)
    q, k, v, _ = inputs("linear")
    with pytest.raises(ValueError, match=r"initial_state has shape \(1, 2, 4, 3\), expected \(1, 2, 3, 4\)"):
        forward("linear", q, k, v, form="chunked", initial_state=torch.zeros(1, 2, 4, 3))
    with pytest.raises(ValueError, match="initial_state.k has shape"):
        forward("softmax", q, k, v, form="parallel", initial_state=(torch.zeros(1, 3, 2, 5), torch.zeros(1, 3, 2, 3)))
