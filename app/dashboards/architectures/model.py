"""The architectures page's numbers, read off the engine, and its store (no Panel, no Bokeh).

What tells the models apart most is their transition A_t (S_t = S_{t-1} A_t + W_t). Two readings of it:

- **forgetting**: how much of a pair written at token 0 is left after n more tokens. The pair's part of
  the state is v₀ k₀ᵀ A_1 ⋯ A_n (the recurrence is linear in S), so read with its own key it gives
  v₀ · (k₀ᵀ A_1 ⋯ A_n k₀): the share k₀ᵀ A_1 ⋯ A_n k₀ is what is left (1: all of it, 0: nothing).
  The later tokens come with random unit keys (what the delta rule erases depends on them); the
  curve is the mean over a few such texts.
- **eigenvalues** of A_t at one token: 1 keeps a direction, between 0 and 1 fades it, 0 erases it,
  below 0 flips its sign (the delta rule with β ∈ (0, 2), Grazzi et al. 2025; DeltaNet's papers keep
  β ∈ (0, 1)).

Each A_t is read off the engine's own recurrent step (engine.stepping.step) from S_{t-1} = I with a
zero value, so S_t = A_t; the gates come from the one recipe (engine.gates.make_gates) at the
page's illustrative α (the values the registry's cards quote) and β = 1. The numbers are the same for
every visitor: computed once per process.
"""
import math

import numpy as np
import param
import torch
import torch.nn.functional as F

from lineare.app.mechanism import D_K
from lineare.app.shared import shared_cache
from lineare.app.variants import ORDER, REGISTRY
from lineare.engine.gates import make_gates, retnet_log_decay
from lineare.engine.ops.recurrent import gates_at
from lineare.engine.ops.states import MLSTMState
from lineare.engine.stepping import step

D = D_K                                 # d_k = d_v, as on "The state fills up"
ARCHITECTURES = ORDER                   # accumulate, fade the past, correct what is written
TOKENS = 64                             # the forgetting curves run this many tokens after the pair
TEXTS = 32                              # … over this many random texts (their mean is drawn)
SEED = 0
WIDE_BETA = 2.0                         # β ∈ (0, 2) (Grazzi et al. 2025) approaches 2: eigenvalue 1 − β → −1
WIDE = ("deltanet", "gated_deltanet")   # RWKV-7's in-context learning rate stays in (0, 1)

# illustrative α (what each model keeps per token), also those of the knob links; the registry's
# Superiore card texts quote them ("Here α_t = 0.8")
RETNET_GAMMA = math.exp(retnet_log_decay(1, torch.float64)[0])          # γ of the first head, 1 − 2^−5
CARD_ALPHA = {"retnet": RETNET_GAMMA, "mamba2": 0.8, "gla": 0.7, "rwkv6": 0.7, "mlstm": 0.9,
              "gated_deltanet": 0.8, "rwkv7": 0.7}


def card_alpha(variant):
    """The page's α: its illustrative value, else the registry's default."""
    return CARD_ALPHA.get(variant, REGISTRY[variant].alpha)


def texts():
    """(first keys [TEXTS, D], later keys [TEXTS, TOKENS, D]): seeded random unit keys, float64. Made anew for each
    curve (a few ms; each curve is computed once per process): tensors kept for every session could be written."""
    generator = torch.Generator().manual_seed(SEED)
    keys = F.normalize(torch.randn(TEXTS, TOKENS + 1, D, generator=generator, dtype=torch.float64), dim=-1)
    return keys[:, 0], keys[:, 1:]


def token_gates(variant, keys, beta=1.0):
    """One token's gates for engine.stepping.step for each of the keys [N, D] (N tokens, one head, each
    its own batch element): the recipe at the page's α and β = 1; β = 2 (WIDE_BETA) doubles the delta
    rule's step afterwards, since the recipe's knob stops at 1."""
    gates = make_gates(variant, (len(keys), 1, 1, D), alpha=card_alpha(variant), beta=min(beta, 1.0),
                       keys=keys.view(-1, 1, 1, D), dtype=torch.float64)             # [N, T = 1, 1, …]
    if beta > 1.0:
        if variant not in WIDE:
            raise ValueError(f"{variant}: β above 1 is drawn for {', '.join(WIDE)} only")
        gates["beta"] = gates["beta"] * beta
    return gates_at(variant, gates, 0)                                               # [N, 1, …]


def transitions(variant, keys, beta=1.0):
    """A_t [..., D, D] of tokens with keys [..., D], read off the engine's step: every token is its own
    batch element, stepped once from S_{t-1} = I with a zero value, so S_t = A_t."""
    flat = keys.reshape(-1, D)                                                       # [N, D]
    N = len(flat)
    identity = torch.eye(D, dtype=torch.float64).expand(N, 1, D, D).clone()
    state = identity if variant != "mlstm" else MLSTMState(
        identity, torch.zeros(N, 1, D, dtype=torch.float64), torch.zeros(N, 1, dtype=torch.float64))
    key, zero = flat.unsqueeze(1), torch.zeros(N, 1, D, dtype=torch.float64)          # [N, 1, D]
    _o, after, record = step(variant, state, key, key, zero, scale=1.0, **token_gates(variant, flat, beta))
    A = after.C if variant == "mlstm" else after                                     # [N, 1, D, D]
    if variant == "mlstm":                      # the true state is the stored one times e^{m_t}
        A = A * torch.as_tensor(np.exp(record.extras["m"]))[..., None, None]
    return A[:, 0].reshape(*keys.shape[:-1], D, D)


@shared_cache(maxsize=None)
def forgetting_curve(variant):
    """[TOKENS + 1]: the mean share of a pair written at token 0 left after n = 0 … TOKENS tokens."""
    first, later = texts()
    A = transitions(variant, later)                                                   # [B, T, D, D]
    row, shares = first.clone(), [torch.ones(len(first), dtype=torch.float64)]      # k₀ᵀ A_1 ⋯ A_n
    for t in range(TOKENS):
        row = torch.einsum("bi,bij->bj", row, A[:, t])
        shares.append((row * first).sum(-1))
    return torch.stack(shares, 1).mean(0).numpy()


@shared_cache(maxsize=None)
def eigenvalues(variant, beta=1.0):
    """The eigenvalues of A_t at one token (the first random key), real parts, sorted [D]. Every
    transition here is symmetric (a diagonal, or a diagonal minus κ̂κ̂ᵀ scaled), so they are real."""
    _first, later = texts()
    A = transitions(variant, later[0, :1], beta)[0].numpy()
    values = np.linalg.eigvals(A)
    return np.sort(values.real)


def knob_setting(variant):
    """(gate, α, β, exact): where the model sits on the transition knob, or its nearest setting."""
    record = REGISTRY[variant]
    exact = record.knob is not None
    gate, beta = record.knob if exact else record.nearest
    alpha = card_alpha(variant) if gate != "none" else 1.0
    return gate, alpha, beta, exact


class ArchitecturesStore(param.Parameterized):
    """The one input of the page: which model is filled into the skeleton at the top."""

    arch = param.Selector(default="linear", objects=list(ARCHITECTURES))    # the highlighted model (no doc:
                                                                            # it would show untranslated)

    URL = {"arch": "arch"}
