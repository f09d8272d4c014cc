"""The architectures page's pictures, read off the engine, and its store (no Panel, no Bokeh).

Each card shows the transition A_t of one token: one step of the model's own recurrent step
(engine.stepping.step) from S_{t-1} = I gives S_t = A_t + W_t, and the record's write W_t is
subtracted. mLSTM keeps its state divided by e^{m_t} (its stabilizer), so its picture is rescaled by
that factor. The token and its gates (the gate recipe, engine.gates.make_gates, at illustrative α
values) are the same for every visitor, so the pictures are computed once per process.
"""
import functools
import math

import numpy as np
import param
import torch

from app.variants import ORDER, REGISTRY
from engine.gates import make_gates, retnet_log_decay
from engine.ops.recurrent import gates_at
from engine.ops.states import MLSTMState
from engine.stepping import step

D = 8                                   # d_k = d_v of the pictures: small enough to read every cell
ARCHITECTURES = ORDER                   # accumulate, fade the past, correct what is written

# illustrative α of the pictures (and of the knob links): what each model keeps per token (β = 1); a
# stronger fading than the registry's default, so that it shows on a ±1 colour scale
RETNET_GAMMA = math.exp(retnet_log_decay(1, torch.float64)[0])          # γ of the first head, 1 − 2^−5
CARD_ALPHA = {"retnet": RETNET_GAMMA, "mamba2": 0.8, "gla": 0.7, "rwkv6": 0.7, "mlstm": 0.9,
              "gated_deltanet": 0.8, "rwkv7": 0.7}


def card_alpha(variant):
    """The card's α: its illustrative value, else the registry's default."""
    return CARD_ALPHA.get(variant, REGISTRY[variant].alpha)
KEY = torch.tensor([0, 0.48, 0, 0.6, 0, 0, 0.64, 0], dtype=torch.float64)     # a unit key on dimensions 1, 3, 6
VALUE = torch.tensor([0.5, -0.5, 0.5, 0, 0, 0.5, 0, 0], dtype=torch.float64)


def card_gates(variant):
    """One token's gates for engine.stepping.step (B = H = 1): the recipe at the card's α, β = 1."""
    gates = make_gates(variant, (1, 1, 1, D), alpha=card_alpha(variant), beta=1.0, keys=KEY.view(1, 1, 1, D),
                       dtype=torch.float64)                                    # [1, T = 1, 1, …]
    return gates_at(variant, gates, 0)                                         # [1, 1, …]: token 0


@functools.lru_cache(maxsize=None)
def transition_step(variant):
    """(A_t [d_k, d_k], StepRecord) of one token, read off the engine's step from S_{t-1} = I."""
    identity = torch.eye(D, dtype=torch.float64).view(1, 1, D, D)
    state = identity
    if variant == "mlstm":
        state = MLSTMState(identity, torch.zeros(1, 1, D, dtype=torch.float64), torch.zeros(1, 1, dtype=torch.float64))
    key, value = KEY.view(1, 1, D), VALUE.view(1, 1, D)
    _o, after, record = step(variant, state, key, key, value, scale=1.0, **card_gates(variant))
    S = (after.C if variant == "mlstm" else after)[0, 0].numpy()
    transition = S - record.write[0, 0]                 # S_t = I A_t + W_t
    if variant == "mlstm":                              # the true state is the stored one times e^{m_t}
        transition = transition * np.exp(record.extras["m"][0, 0])
    return transition, record


def transition_matrix(variant):
    return transition_step(variant)[0]


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
