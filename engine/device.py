"""Where tensors live: CUDA when there is one, CPU otherwise; `LINEARE_DEVICE` forces a choice."""
import os

import torch

ENV_VAR = "LINEARE_DEVICE"


def get_device(name=None):
    """Return the torch device to compute on.

    `name` (or the LINEARE_DEVICE environment variable) may be "cpu", "cuda" or "cuda:N";
    without either, CUDA is used when available. Asking for CUDA where there is none raises
    a ValueError that says so, instead of failing later inside torch.
    """
    name = name if name is not None else os.environ.get(ENV_VAR, "").strip()
    if not name:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name.lower())
    except RuntimeError:
        raise ValueError(f"{ENV_VAR}={name!r} is not a device; use 'cpu' or 'cuda'") from None
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"{ENV_VAR}={name!r} is not supported; use 'cpu' or 'cuda'")
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"CUDA was requested ({name!r}) but this machine has no usable CUDA "
                             f"device; use {ENV_VAR}=cpu")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ValueError(f"CUDA device {device.index} was requested but only "
                             f"{torch.cuda.device_count()} exist")
    return device
