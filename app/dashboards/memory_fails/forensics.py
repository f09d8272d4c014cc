"""Where memory fails, recall forensics: a trained model's read-out at one query, taken apart by write.

Every fixed-state layer updates S_t = S_{t-1} A_t + W_t (A_t: `engine.stepping.transition`, W_t the
token's write), so its state is linear in the writes and so is its read-out:

    o_t = S_t q_t = Σ_{i ≤ t} W_i (A_{i+1} ⋯ A_t) q_t.

`read_out_parts` computes each term c_i = W_i (A_{i+1} ⋯ A_t) q_t from the engine's records, walking
back from the query: x ← A_i x. Besides c_i it keeps how much of the query's direction the later
transitions let through to write i, ‖(A_{i+1} ⋯ A_t) q_t‖ / ‖q_t‖, and how similar write i's key is to
the query, cos(k_i, q_t). Per variant:

- RWKV-6 reads S_{t-1} before its update and adds the token's own value with a bonus u:
  o_t = S_{t-1} q_t + ((u ⊙ k_t)·q_t) v_t, so the walk starts one token earlier;
- mLSTM keeps a stabilized C_t = Σ_i W_i Π_{j>i} f'_j with f'_j = exp(log σ(f̃_j) + m_{j-1} − m_j)
  (the transition is f'_j I) and divides the read-out by max(|n_t·q_t|, e^{−m_t}): both are one factor
  for every term, so the split is exact. What it lets through is shown as the forget gates' own
  product Π σ(f̃_j): the stabilizer's e^{m_i − m_t} only undoes the e^{−m_i} of the stored write;
- softmax keeps every key and value: c_i = a_i v_i with the attention weights a_i, nothing fades;
- linear attention with a normalizer divides by z_t·q_t, one factor for every term too.
"""
from dataclasses import dataclass

import numpy as np

from lineare.engine.stepping import transition
from lineare.engine.tasks import IGNORE

FADED = 0.25          # the right pair "faded" when the transitions let through less than this share of q
SIMILAR = 0.5         # keys with a cosine of at least this to the query count as similar
SHOWN = 5             # the other writes listed beside the right pair, largest share first


@dataclass(frozen=True)
class LayerParts:
    """One layer's read-out at one query, as the sum of what each earlier write puts in.

    contributions [t+1, d_v]  c_i, in the order written; they add up to `output`
    kept          [t+1]       ‖(A_{i+1} ⋯ A_t) q‖ / ‖q‖ (mLSTM: Π σ(f̃_j); softmax: 1)
    similarity    [t+1]       cos(k_i, q_t)
    output        [d_v]       the layer's read-out, from the engine's record
    """
    contributions: np.ndarray
    kept: np.ndarray
    similarity: np.ndarray
    output: np.ndarray

    @property
    def size(self):
        return np.linalg.norm(self.contributions, axis=1)                              # [t+1]

    @property
    def share(self):
        """c_i · o / ‖o‖²: the part of the read-out along itself each write gives (they add up to 1)."""
        return self.contributions @ self.output / max(float(self.output @ self.output), 1e-30)


def _cosine(a, b):
    return a @ b / np.maximum(np.linalg.norm(a, axis=-1) * np.linalg.norm(b), 1e-30)


def read_out_parts(records, t, head=0):
    """The read-out of one layer at token t taken apart (records: that layer's StepRecord per token)."""
    record = records[t]
    q = record.query[0, head].astype(np.float64)                                       # [d_k]
    keys = np.stack([r.key[0, head] for r in records[:t + 1]]).astype(np.float64)      # [t+1, d_k]
    output = record.output[0, head].astype(np.float64)                                 # [d_v]
    similarity = _cosine(keys, q)
    if record.state is None:                                   # softmax: the cache, weighted by attention
        values = np.stack([r.target[0, head] for r in records[:t + 1]]).astype(np.float64)   # [t+1, d_v]
        weights = record.extras["attention"][0, head].astype(np.float64)                     # [t+1]
        return LayerParts(weights[:, None] * values, np.ones(t + 1), similarity, output)
    contributions = np.zeros((t + 1, len(output)))
    kept = np.ones(t + 1)
    x = q.copy()                                               # (A_{i+1} ⋯ A_t) q, walking back
    last = t
    if record.variant == "rwkv6":                              # read before the update, plus the bonus
        bonus = record.extras["u"][head].astype(np.float64) * keys[t]
        contributions[t] = (bonus @ q) * record.target[0, head]
        last = t - 1
    mlstm = record.variant == "mlstm"
    forget = 1.0                                               # mLSTM: Π σ(f̃_j) over the later tokens
    for i in range(last, -1, -1):
        step = records[i]
        contributions[i] = step.write[0, head].astype(np.float64) @ x
        kept[i] = forget if mlstm else np.linalg.norm(x) / max(np.linalg.norm(q), 1e-30)
        if mlstm:
            x = float(step.extras["forget_stabilized"][0, head]) * x
            forget *= float(step.decay[0, head])
        else:
            x = transition(step)[0, head] @ x                                          # [d_k]
    if mlstm:
        n, m = record.extras["n"][0, head], float(record.extras["m"][0, head])
        contributions /= max(abs(float(n @ q)), np.exp(-m))
    elif "z" in record.extras:                                 # linear attention with its normalizer
        contributions /= float(record.extras["z"][0, head] @ q) + 1e-10
    return LayerParts(contributions, kept, similarity, output)


# ------------------------------------------------------------------------- what it says

@dataclass(frozen=True)
class Verdict:
    """What one layer's numbers say about a query: `kind` is faded, crosstalk, right or spread."""
    kind: str
    right_share: float            # the right pair's writes together, share of the read-out
    right_kept: float             # the most the transitions let through to either of them
    others: list                  # positions of the SHOWN other writes with the largest share
    others_share: float           # the first three of them together
    others_similarity: float      # their mean key similarity to the query


def verdict(parts, right):
    """Fading when the right pair is mostly faded; cross-talk when the three largest other writes,
    with keys similar to the query, give more than the right pair; `right` when the pair gives the
    largest part; `spread` otherwise (dissimilar writes adding up)."""
    share = parts.share
    others = [int(i) for i in np.argsort(-share) if int(i) not in right][:SHOWN]
    top = others[:3]
    right_share = float(share[right].sum())
    right_kept = float(parts.kept[right].max())
    others_share = float(share[top].sum())
    others_similarity = float(parts.similarity[top].mean()) if top else 0.0
    if right_kept < FADED:
        kind = "faded"
    elif others_share > right_share and others_similarity >= SIMILAR:
        kind = "crosstalk"
    elif not others or right_share >= share[others[0]]:
        kind = "right"
    else:
        kind = "spread"
    return Verdict(kind, right_share, right_kept, others, others_share, others_similarity)


@dataclass(frozen=True)
class QueryForensics:
    """One query of one trained model taken apart, layer by layer."""
    variant: str
    query: int                    # 1-based, in the order asked
    position: int                 # where the query is in the sequence
    right: list                   # positions of the right pair: the key asked, then its value
    tokens: np.ndarray            # the example's input ids [L]
    expected: int                 # the value the query should produce
    answer: int                   # what the stepped model produced
    layers: list                  # LayerParts per layer
    verdicts: list                # Verdict per layer


def take_apart(variant, tokens, targets, logits, layers, query):
    """QueryForensics of the `query`-th query (1-based) of a run stepped through `variant`'s model
    (tokens, targets [L]; logits [L, V]; layers[l][t] the StepRecords)."""
    positions = np.flatnonzero(targets != IGNORE)
    t = int(positions[query - 1])
    first = int(np.flatnonzero(tokens[:t] == tokens[t])[0])          # the key in the context …
    right = [first, first + 1]                                       # … and the value right after it
    parts = [read_out_parts(records, t) for records in layers]
    return QueryForensics(variant, query, t, right, tokens, int(targets[t]), int(logits[t].argmax()), parts,
                          [verdict(p, right) for p in parts])
