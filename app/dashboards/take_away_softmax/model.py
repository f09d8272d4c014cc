"""The numbers of "Take away the softmax": one sentence through both attentions, and what each order costs.

`attend(kind)` runs the sentence's fixed q, k, v through the table (the parallel form) and, for the
feature map, through the running state too (the recurrent form); `multiply_adds(T, d)` counts the
two orders of the same product. `SoftmaxStore` holds the page's controls. No Panel, no Bokeh.
"""
from dataclasses import dataclass

import numpy as np
import param

from lineare.app.i18n import N_
from lineare.app.shared import shared_cache

# eight words, so that the table (8 × 8) and the state (4 × 4) both fit on one screen with their numbers;
# each translation keeps eight words (tests/test_take_away_softmax.py checks)
SENTENCE = N_("Yesterday Anna read a long book about whales")
WORDS = 8
D = 4                         # d_k = d_v = 4: the state S_t is 4 × 4
SEED = 5                      # the fixed embeddings and projections
KINDS = ("softmax", "linear")
LENGTHS = tuple(2 ** n for n in range(3, 13))        # the cost's length slider: 8 … 4096
DIMS = (32, 64, 128, 256)                            # head dimension d of the cost


def elu_plus_one(x):
    """φ(x) = elu(x) + 1: x + 1 for x > 0, eˣ otherwise; always positive (Katharopoulos et al. 2020)."""
    x = np.asarray(x, dtype=np.float64)
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))


@shared_cache(maxsize=1)
def sentence_vectors(words=WORDS, d=D, seed=SEED):
    """(q, k, v), each [T, d] float64: fixed seeded embeddings x_t times fixed projections W_q, W_k, W_v.
    The numbers belong to positions, not to the words' spelling, so both languages show the same ones."""
    generator = np.random.default_rng(seed)
    x = generator.standard_normal((words, d))                                     # embeddings [T, d]
    W_q, W_k, W_v = generator.standard_normal((3, d, d)) / np.sqrt(d) * 1.6       # projections [d, d]
    q, k, v = x @ W_q, x @ W_k, x @ W_v                                           # [T, d] each
    for array in (q, k, v):
        array.setflags(write=False)
    return q, k, v


@dataclass(frozen=True)
class Attention:
    """One attention over the sentence. Row t of `weights` is what word t takes from each word i ≤ t."""
    kind: str                      # "softmax" or "linear" (φ = elu + 1)
    q: np.ndarray                  # [T, d]
    k: np.ndarray                  # [T, d]
    v: np.ndarray                  # [T, d]
    weights: np.ndarray            # [T, T], rows sum to 1, NaN above the diagonal (the future: masked)
    outputs: np.ndarray            # [T, d_v] from the table: o_t = Σ_i weights[t, i] v_i
    states: np.ndarray | None      # linear: [T, d_v, d_k], S_t = Σ_{i≤t} v_i φ(k_i)ᵀ
    sums: np.ndarray | None        # linear: [T, d_k], z_t = Σ_{i≤t} φ(k_i)
    recurrent: np.ndarray | None   # linear: [T, d_v], o_t = S_t φ(q_t) / z_tᵀ φ(q_t), from the state alone

    @property
    def length(self):
        return len(self.q)

    def gap(self, t):
        """Largest |o_t from the table − o_t from the state| (linear only)."""
        return float(np.abs(self.outputs[t] - self.recurrent[t]).max())


def attend(kind):
    """The sentence through softmax attention or linear attention with φ = elu + 1 (float64)."""
    if kind not in KINDS:
        raise ValueError(f"unknown attention {kind!r}; choose one of {', '.join(KINDS)}")
    q, k, v = sentence_vectors()
    T, d = q.shape
    causal = np.tri(T, dtype=bool)                                            # i ≤ t
    if kind == "softmax":
        scores = np.where(causal, q @ k.T / np.sqrt(d), -np.inf)              # [T, T]
        scores = np.exp(scores - scores.max(axis=1, keepdims=True))
    else:
        scores = np.where(causal, elu_plus_one(q) @ elu_plus_one(k).T, 0.0)   # φ(q_t)ᵀφ(k_i) [T, T]
    weights = scores / scores.sum(axis=1, keepdims=True)
    outputs = weights @ v                                                     # the parallel form [T, d_v]
    weights = np.where(causal, weights, np.nan)
    if kind == "softmax":
        return Attention(kind, q, k, v, weights, outputs, None, None, None)
    # the recurrent form: two running sums, one token at a time; the table is never built
    phi_q, phi_k = elu_plus_one(q), elu_plus_one(k)
    S, z = np.zeros((d, d)), np.zeros(d)
    states, sums, recurrent = [], [], []
    for t in range(T):
        S = S + np.outer(v[t], phi_k[t])                                      # [d_v, d_k]
        z = z + phi_k[t]                                                      # [d_k]
        states.append(S)
        sums.append(z)
        recurrent.append(S @ phi_q[t] / (z @ phi_q[t]))
    return Attention(kind, q, k, v, weights, outputs, np.array(states), np.array(sums), np.array(recurrent))


def multiply_adds(T, d):
    """Multiply-adds of the two orders over a whole sequence of T tokens, one head of dimension d:
    (QKᵀ)V builds the T × T table (T·T·d) and multiplies it by V (T·T·d); Q(KᵀV) builds the d × d
    matrix KᵀV (d·T·d) and multiplies Q by it (T·d·d). The mask and the normalizer are left out."""
    T, d = int(T), int(d)
    return {"parallel": 2 * T * T * d, "recurrent": 2 * T * d * d}


def cost_curves(d):
    """The two counts at every length of the slider: {form: [count at each of LENGTHS]}."""
    counts = [multiply_adds(T, d) for T in LENGTHS]
    return {form: [c[form] for c in counts] for form in ("parallel", "recurrent")}


class SoftmaxStore(param.Parameterized):
    """The page's controls; the sentence's numbers follow the attention, the counts follow T and d."""

    attention = param.Selector(default="softmax", objects=list(KINDS), doc="softmax, or linear with φ = elu + 1")
    length = param.Selector(default=1024, objects=list(LENGTHS), doc="sequence length T of the cost")
    dim = param.Selector(default=64, objects=list(DIMS), doc="head dimension d of the cost")
    run = param.Parameter(default=None, doc="derived: the Attention of the sentence")
    counts = param.Dict(default={}, doc="derived: multiply_adds(length, dim)")

    URL = {"attention": "attention", "length": "T", "dim": "d"}

    def __init__(self, **params):
        super().__init__(**params)
        self._attend()
        self._count()

    @param.depends("attention", watch=True)
    def _attend(self):
        self.run = attend(self.attention)

    @param.depends("length", "dim", watch=True)
    def _count(self):
        self.counts = multiply_adds(self.length, self.dim)
