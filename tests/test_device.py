"""Device choice: CUDA when present, CPU otherwise, LINEARE_DEVICE forces one; clear errors."""
import pytest
import torch

from lineare.engine.device import get_device


def test_default_follows_cuda_availability(monkeypatch):
    monkeypatch.delenv("LINEARE_DEVICE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert get_device() == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert get_device().type == "cuda"


def test_environment_forces_cpu(monkeypatch):
    monkeypatch.setenv("LINEARE_DEVICE", "cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert get_device() == torch.device("cpu")


def test_cuda_without_cuda_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setenv("LINEARE_DEVICE", "cuda")
    with pytest.raises(ValueError, match="no usable CUDA device"):
        get_device()
    with pytest.raises(ValueError, match="no usable CUDA device"):
        get_device("cuda:0")


@pytest.mark.parametrize("name", ["gpu0", "tpu", "mps", "cuda:x"])
def test_unknown_device_names(monkeypatch, name):
    monkeypatch.setenv("LINEARE_DEVICE", name)
    with pytest.raises(ValueError, match="LINEARE_DEVICE"):
        get_device()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_forms_agree_on_cuda():
    from lineare.engine.ops import forward
    from inputs import VARIANTS, make_inputs, rel_rms
    for variant in VARIANTS:
        q, k, v, gates = make_inputs(variant, T=70, H=2, dtype=torch.float32)
        ref, _ = forward(variant, q, k, v, form="recurrent", **gates)
        on = lambda x: x.cuda() if torch.is_tensor(x) else x
        for form in ("recurrent", "parallel", "chunked"):
            o, _ = forward(variant, on(q), on(k), on(v), form=form, **{n: on(x) for n, x in gates.items()})
            assert rel_rms(o.cpu(), ref) <= 1e-5, (variant, form)
