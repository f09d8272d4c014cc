"""States that carry more than the matrix S (engine/README.md, "Contract"). Each can be fed back as `initial_state`."""
from typing import NamedTuple

import torch


class LinearState(NamedTuple):
    """Linear attention with `normalize=True`: S [B,H,d_v,d_k] and the key sum z [B,H,d_k]."""
    S: torch.Tensor
    z: torch.Tensor


class MLSTMState(NamedTuple):
    """mLSTM: memory C [B,H,d_v,d_k], normalizer n [B,H,d_k], log-space stabilizer m [B,H]."""
    C: torch.Tensor
    n: torch.Tensor
    m: torch.Tensor


class KVCache(NamedTuple):
    """Softmax attention: every past key [B,T,H,d_k] and value [B,T,H,d_v]."""
    k: torch.Tensor
    v: torch.Tensor


def state_bytes(state):
    """Bytes held by a state of any variant (a tensor or one of the tuples above)."""
    tensors = state if isinstance(state, tuple) else (state,)
    return sum(t.numel() * t.element_size() for t in tensors)
