"""Synthetic tasks: multi-query associative recall (MQAR) and the capacity data (engine/README.md, "Tasks and
checkpoints").

    inputs, targets = mqar(vocab_size=256, seq_len=64, num_pairs=8, num_examples=1000, seed=0)
    data = capacity_data(num_pairs=80, d_k=64, keys="random", seed=0)

Both are pure functions of their arguments: the same seed gives the same data, on any machine
(they draw from `numpy.random.default_rng(seed)`).
"""
import math
import numbers
from typing import NamedTuple

import numpy as np
import torch

IGNORE = -100          # target of the positions that are not scored (PyTorch's cross-entropy default)

__all__ = ["IGNORE", "mqar", "mqar_mixture", "CapacityData", "capacity_data", "KEY_KINDS"]


# ------------------------------------------------------------------------------------- MQAR

def mqar(*, vocab_size, seq_len, num_pairs, num_examples, seed, power_a=0.01, random_filler=False):
    """Multi-query associative recall (Zoology, Arora et al. 2023): `(inputs, targets)`, int64 [N, L].

    One example, with V = vocab_size, L = seq_len, K = num_pairs:

        position:  0   1   2   3  …  2K-2 2K-1 | 2K … L-1
        input:     k1  v1  k2  v2 …  kK   vK   | the K keys asked again, at even offsets; 0 elsewhere
        target:    -100 everywhere, except at a position holding a key asked again: its value

    - keys are distinct ids from [1, V//2), values distinct ids from [V//2, V); id 0 is the filler;
    - the second part (the L − 2K positions after the context) offers S = (L − 2K) // 2 slots, at
      its even offsets 0, 2, …, 2(S−1); each key is asked in one slot, the K slots drawn without
      replacement with probability p(i) ∝ i^(a−1) for slot i = 1 … S (a = power_a; a = 0.01 puts
      most queries early with a long tail, a = 1 is uniform); which key goes to which slot is a
      random permutation, so the query order is unrelated to the order of the context;
    - targets are next-token targets: at the position where key k_j is asked again the model must
      output v_j; every other position has target -100 (ignored by cross-entropy). The value is not
      repeated after the query: the next input is filler, as in Zoology;
    - with random_filler=True, the filler positions (everything but the context and the queries)
      hold ids drawn uniformly from [0, V) instead of 0; they may coincide with keys or values of the
      example and are never scored.

    `num_pairs` may be a list of K values (e.g. [1, 2, 4, 8, 16]): the examples are then split as
    evenly as possible among them and shuffled, to train on a mixture (see `mqar_mixture`).

    Raises ValueError when the sizes are not positive integers or do not fit: V//2 − 1 ≥ K distinct
    keys and V − V//2 ≥ K distinct values are needed, and L ≥ 4K (the 2K-token context, then K
    query slots of two tokens each).
    """
    V = _positive_int("vocab_size", vocab_size)
    L = _positive_int("seq_len", seq_len)
    N = _positive_int("num_examples", num_examples)
    seed = _seed(seed)
    a = _positive_float("power_a", power_a)
    if not isinstance(random_filler, (bool, np.bool_)):
        raise ValueError(f"random_filler must be True or False, not {random_filler!r}")
    if isinstance(num_pairs, (list, tuple, np.ndarray)):
        Ks = [_positive_int("num_pairs", K) for K in num_pairs]
        if not Ks:
            raise ValueError("num_pairs is an empty list; give at least one number of pairs")
    else:
        Ks = [_positive_int("num_pairs", num_pairs)]
    for K in Ks:
        _check_mqar_fits(V, L, K)

    rng = np.random.default_rng(seed)
    if len(Ks) == 1:
        inputs, targets = _mqar(rng, V, L, Ks[0], N, a, bool(random_filler))
    else:
        counts = [N // len(Ks) + (i < N % len(Ks)) for i in range(len(Ks))]
        parts = [_mqar(rng, V, L, K, n, a, bool(random_filler)) for K, n in zip(Ks, counts) if n]
        order = rng.permutation(N)
        inputs = np.concatenate([p[0] for p in parts])[order]
        targets = np.concatenate([p[1] for p in parts])[order]
    return torch.from_numpy(inputs), torch.from_numpy(targets)


def mqar_mixture(*, vocab_size, seq_len, num_examples, seed, num_pairs=(1, 2, 4, 8, 16), **options):
    """MQAR examples with several numbers of pairs mixed in one shuffled set, for training.

    The examples are split as evenly as possible among the K values of `num_pairs`; the other
    arguments are those of `mqar`. Every K must fit the vocabulary and the length.
    """
    return mqar(vocab_size=vocab_size, seq_len=seq_len, num_pairs=list(num_pairs),
                num_examples=num_examples, seed=seed, **options)


def _check_mqar_fits(V, L, K):
    if V // 2 - 1 < K:
        raise ValueError(f"vocab_size {V} is too small for {K} distinct keys: keys come from "
                         f"[1, {V // 2}), which holds {max(0, V // 2 - 1)} ids; use vocab_size ≥ {2 * K + 2}")
    if L < 4 * K:
        raise ValueError(f"seq_len {L} is too short for {K} pairs: the context takes 2K = {2 * K} "
                         f"tokens and the K queries 2K more; use seq_len ≥ {4 * K}")


_BATCH = 4096  # examples drawn per block, to bound the temporary [batch, ids] arrays


def _mqar(rng, V, L, K, N, a, random_filler):
    inputs = np.zeros((N, L), dtype=np.int64)
    targets = np.full((N, L), IGNORE, dtype=np.int64)
    slots = (L - 2 * K) // 2
    log_p = (a - 1.0) * np.log(np.arange(1, slots + 1, dtype=np.float64))     # log p(i), unnormalized
    rows_all = np.arange(N)[:, None]
    for start in range(0, N, _BATCH):
        n = min(_BATCH, N - start)
        rows = rows_all[:n] + start
        keys = 1 + _distinct(rng, n, V // 2 - 1, K)                           # ids in [1, V//2)
        values = V // 2 + _distinct(rng, n, V - V // 2, K)                    # ids in [V//2, V)
        inputs[start:start + n, 0:2 * K:2] = keys
        inputs[start:start + n, 1:2 * K:2] = values
        # K slots without replacement, slot i with probability ∝ i^(a−1) at each successive draw:
        # the K largest of log p + Gumbel noise (the Gumbel-top-k form of successive sampling)
        scores = log_p + rng.gumbel(size=(n, slots))
        chosen = np.argpartition(-scores, K - 1, axis=1)[:, :K]
        chosen = rng.permuted(chosen, axis=1)                                 # random key ↔ slot pairing
        positions = 2 * K + 2 * chosen
        if random_filler:
            inputs[start:start + n, 2 * K:] = rng.integers(0, V, size=(n, L - 2 * K))
        inputs[rows, positions] = keys
        targets[rows, positions] = values
    return inputs, targets


def _distinct(rng, n, m, K):
    """[n, K] ids from range(m), distinct within each row, uniformly (a random K-subset, random order)."""
    if K * 8 < m:  # few draws from many ids: rejection of rows with repeats is cheap
        out = rng.integers(0, m, size=(n, K))
        while True:
            s = np.sort(out, axis=1)
            bad = (s[:, 1:] == s[:, :-1]).any(axis=1)
            if not bad.any():
                return out
            out[bad] = rng.integers(0, m, size=(int(bad.sum()), K))
    return np.argsort(rng.random((n, m)), axis=1)[:, :K]


# --------------------------------------------------------------------------- capacity data

KEY_KINDS = ("orthogonal", "random", "correlated")
CORRELATION = 0.5      # cosine similarity of two "correlated" keys, on average


class CapacityData(NamedTuple):
    """What `capacity_data` returns: a write sequence and the questions to ask after it.

    keys      [W, d_k]  the key of each write, unit norm (W = N + repeat writes)
    values    [W, W]    the value of each write: write w stores the one-hot vector e_w
    queries   [N, d_k]  the N distinct keys (= keys[:N]), to read back after all writes
    targets   [N]       int64: for each query, the index of the value it should recall,
                        i.e. the latest write of that key (= i when key i was never rewritten)
    """
    keys: torch.Tensor
    values: torch.Tensor
    queries: torch.Tensor
    targets: torch.Tensor

    @property
    def target_values(self):
        """[N, W]: the one-hot vector each query should read back."""
        return self.values[self.targets]


def capacity_data(*, num_pairs, d_k, keys="random", repeat=0, seed, dtype=torch.float64):
    """N key→value associations for the capacity experiment (Schlag, Irie & Schmidhuber 2021).

    Writes 0 … N−1 store N distinct unit keys, write w storing the one-hot value e_w. With
    repeat = R, R more writes follow, each reusing an earlier key (drawn at random, without
    replacement while R ≤ N) with a new value e_{N+r}: the value to recall for a key is the one of
    its latest write. The value dimension is therefore W = N + R, one fresh id per write.

    keys:
    - "orthogonal": a random orthonormal set (needs N ≤ d_k; ValueError otherwise — past d_k no N
      keys can be orthogonal, and the capacity curve beyond d_k is what "random" keys are for, as
      in Schlag et al., where keys are random beyond d_k);
    - "random": independent directions, uniform on the unit sphere (normalized Gaussians);
    - "correlated": k_i = √ρ·u + √(1−ρ)·w_i with one shared unit vector u and random unit w_i
      orthogonal to u, ρ = 0.5: every key has unit norm and cos(k_i, k_j) = ρ + (1−ρ) w_i·w_j ≈ 0.5
      (needs d_k ≥ 2).
    """
    N = _positive_int("num_pairs", num_pairs)
    D = _positive_int("d_k", d_k)
    R = _nonnegative_int("repeat", repeat)
    seed = _seed(seed)
    _check_capacity_fits(N, D, keys)
    if dtype not in (torch.float32, torch.float64):
        raise ValueError(f"dtype must be torch.float32 or torch.float64, not {dtype!r}")
    return _capacity_data(np.random.default_rng(seed), N, D, keys, R, dtype)


def _check_capacity_fits(N, D, keys):
    if keys not in KEY_KINDS:
        raise ValueError(f"unknown keys {keys!r}; choose one of {', '.join(KEY_KINDS)}")
    if keys == "orthogonal" and N > D:
        raise ValueError(f"{N} orthogonal keys do not fit in d_k = {D} dimensions (at most {D}); "
                         f"use keys='random' beyond d_k")
    if keys == "correlated" and D < 2:
        raise ValueError("correlated keys need d_k ≥ 2 (a shared direction and at least one more)")


def _capacity_data(rng, N, D, kind, R, dtype):
    if kind == "orthogonal":
        q, r = np.linalg.qr(rng.standard_normal((D, N)))
        unique = (q * np.sign(np.diag(r))).T                                  # [N, D], orthonormal rows
    elif kind == "random":
        unique = _unit(rng.standard_normal((N, D)))
    else:
        u = _unit(rng.standard_normal(D))
        w = rng.standard_normal((N, D))
        w = _unit(w - np.outer(w @ u, u))                                     # unit, orthogonal to u
        unique = math.sqrt(CORRELATION) * u + math.sqrt(1 - CORRELATION) * w
    again = rng.choice(N, size=R, replace=R > N) if R else np.zeros(0, dtype=np.int64)
    keys = np.concatenate([unique, unique[again]])
    targets = np.arange(N)
    np.maximum.at(targets, again, N + np.arange(R))                           # the latest write wins
    W = N + R
    as_tensor = lambda x: torch.as_tensor(x, dtype=dtype)
    return CapacityData(keys=as_tensor(keys), values=torch.eye(W, dtype=dtype), queries=as_tensor(unique),
                        targets=torch.as_tensor(targets, dtype=torch.int64))


def _unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


# ------------------------------------------------------------------------- argument checks

def _positive_int(name, x):
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Integral):
        raise ValueError(f"{name} must be a positive integer, not {x!r}")
    if x < 1:
        raise ValueError(f"{name} must be a positive integer, not {x}")
    return int(x)


def _nonnegative_int(name, x):
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Integral) or x < 0:
        raise ValueError(f"{name} must be a non-negative integer, not {x!r}")
    return int(x)


def _seed(seed):
    return _nonnegative_int("seed", seed)


def _positive_float(name, x):
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real) or not math.isfinite(x) or x <= 0:
        raise ValueError(f"{name} must be a positive finite number, not {x!r}")
    return float(x)
