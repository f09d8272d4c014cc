"""Mechanism mode: run a variant on a readable sequence without a trained model.

A sequence is a list of tokens in a tiny grammar, one token per step:

    Anna:21    write   store the value "21" under the key "Anna"   (k = key(Anna), v = value(21))
    Anna?      ask     read the memory with the key "Anna"         (q = key(Anna), nothing written)
    ·          wait    nothing written, nothing read: only the transition acts (time passes)

A trained model learns its keys, values and queries; here each word gets a fixed random unit vector
per role and head (seeded, `embedding`), with d_k = d_v = 16, or (keys="perpendicular") each name
its own column of the key space, in order of first appearance, so that the 17th name has to share a
column with the first (`key_columns`). The gates come from the two knobs
(forget α, correct β) through the one gate recipe, `engine.gates.make_gates`, with each variant's
default knobs from its record in `app.variants`. A write token also queries its own key, so the
read-out shows what the memory says about that key right after writing it.

The engine does the stepping (`engine.stepping.run`); `run_sequence` returns its records with the
decoded answers (`decode`: the stored value the read-out points at best, or a tie when two are as close
up to rounding, by the tie rule of `engine.capacity`: a tie is no answer, and counts as wrong). Nothing
here draws or translates (preset names are msgids): problems come back as codes for the app to word.
"""
import re
import zlib
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import torch

from lineare.app.i18n import N_
from lineare.app.shared import read_only, shared_cache
from lineare.app.variants import REGISTRY
from lineare.engine.capacity import rounding_tie
from lineare.engine.gates import make_gates
from lineare.engine.stepping import run
from lineare.engine.tasks import mqar

D_K = D_V = 16
MAX_TOKENS = 40
MAX_CHARS = 300
MAX_HEADS = 4
WAIT = "·"
KEYS = ("perpendicular", "random")

SCALE = {"softmax": 8.0}      # query scale: 1 reads a stored unit key back exactly; softmax needs a sharp one

_WORD = r"\w{1,12}"
_WRITE = re.compile(rf"^({_WORD}):({_WORD})$")
_ASK = re.compile(rf"^({_WORD})\?$")
_WAITS = {WAIT, ".", "-", "_"}

PRESETS = {
    # a small phone book, then questions
    "phonebook": "Anna:21 Bruno:47 Carla:35 Dario:62 · Bruno? · Anna? Dario? · Carla?",
    # Anna changes number: does the memory replace the old one or mix the two?
    "overwrite": "Anna:21 Bruno:47 Anna:99 · · Anna? Bruno?",
    # more pairs than the 16 dimensions of a key can keep apart
    "crowd": ("Anna:26 Bruno:54 Carla:83 Dario:72 Elena:21 Fabio:92 Gina:95 Ivo:69 Luca:77 Marta:29 "
              "Nino:78 Olga:68 Paolo:16 Rita:70 Sara:28 Tina:20 Ugo:58 Vera:56 Zeno:87 Bice:31 Ciro:48 "
              "Dora:40 Enzo:51 Flora:37 Anna? Bruno? Carla? Dario? Elena? Fabio? Gina? Ivo?"),
}
PRESET_NAMES = {"phonebook": N_("Phone book"), "overwrite": N_("A number changes"),
                "crowd": N_("A crowded memory")}


@dataclass(frozen=True)
class Token:
    text: str               # as shown in the token strip
    kind: str               # "write", "ask" or "wait"
    key: str | None = None
    value: str | None = None


def parse(text):
    """Tokens from typed text; returns (tokens, problems) with problems as (code, detail) pairs.

    Codes: "empty", "too_long" (detail: the limit), "too_many" (detail: the limit), "unknown"
    (detail: the offending pieces, as typed). Unknown pieces are left out; nothing raises.
    """
    problems = []
    if len(text) > MAX_CHARS:
        text = text[:MAX_CHARS]
        problems.append(("too_long", str(MAX_CHARS)))
    pieces = [p for p in re.split(r"[\s,;]+", text) if p]
    tokens, unknown = [], []
    for piece in pieces:
        token = _token(piece)
        if token is None:
            unknown.append(piece)
        else:
            tokens.append(token)
    if unknown:
        problems.append(("unknown", " ".join(unknown)))
    if len(tokens) > MAX_TOKENS:
        tokens = tokens[:MAX_TOKENS]
        problems.append(("too_many", str(MAX_TOKENS)))
    if not tokens:
        problems.append(("empty", ""))
    return tokens, problems


def _token(piece):
    if piece in _WAITS:
        return Token(WAIT, "wait")
    if m := _WRITE.match(piece):
        return Token(piece, "write", key=m.group(1), value=m.group(2))
    if m := _ASK.match(piece):
        return Token(piece, "ask", key=m.group(1))
    return None


def mqar_tokens(pairs, example):
    """One MQAR example (engine.tasks.mqar, seed = example) in the grammar: kK:vV pairs, then kK? queries.

    A pair's two positions become one write token (in a trained model a short convolution brings the
    key next to its value); each query slot becomes an ask token, an empty slot a wait token.
    """
    seq_len = 6 * pairs                                        # the context, then 2K query slots
    inputs, _targets = mqar(vocab_size=64, seq_len=seq_len, num_pairs=pairs, num_examples=1, seed=example)
    ids = inputs[0].tolist()
    tokens = [Token(f"k{ids[2 * i]}:v{ids[2 * i + 1]}", "write", key=f"k{ids[2 * i]}", value=f"v{ids[2 * i + 1]}")
              for i in range(pairs)]
    for position in range(2 * pairs, seq_len, 2):
        tokens.append(Token(f"k{ids[position]}?", "ask", key=f"k{ids[position]}") if ids[position]
                      else Token(WAIT, "wait"))
    while tokens and tokens[-1].kind == "wait":
        tokens.pop()
    return tokens


def embedding(word, role, head, seed):
    """The fixed random unit vector of `word` as a "key" or a "value", for one head (d = 16)."""
    rng = np.random.default_rng([seed, head, 0 if role == "key" else 1, zlib.crc32(word.encode("utf-8"))])
    vector = rng.standard_normal(D_K if role == "key" else D_V)
    return vector / np.linalg.norm(vector)


def key_columns(tokens):
    """Perpendicular keys: name → its column of the key space, in order of first appearance; past
    D_K names the columns come round again (name 17 shares column 0 with name 1)."""
    columns = {}
    for token in tokens:
        if token.key is not None and token.key not in columns:
            columns[token.key] = len(columns) % D_K
    return columns


class Answer(NamedTuple):
    """What the memory answered at one token."""
    value: str | None               # the stored value the read-out points at best; None: nothing asked, or a tie
    similarity: float               # its cosine with the read-out (mean over heads)
    expected: str | None            # the latest value stored under the asked key (None: never stored)
    tied: tuple = ()                # the values the read-out is equally close to, up to rounding (a tie: ≥ 2)

    @property
    def right(self):
        return self.value is not None and self.value == self.expected


def decode(scores, candidates, dtype):
    """(value or None, its score, tied values) of a read-out's scores [C] against `candidates`: the best
    candidate, unless another scores the same up to rounding (engine.capacity.rounding_tie, in the `dtype`
    the read-out was computed in): then no value, and the tied candidates, in order."""
    best = int(np.argmax(scores))
    level = rounding_tie(np.full(len(scores), scores[best]), np.asarray(scores), dtype).numpy()     # [C]
    tied = tuple(c for c, same in zip(candidates, level) if same)
    if len(tied) > 1:
        return None, float(scores[best]), tied
    return candidates[best], float(scores[best]), ()


@dataclass
class Run:
    """One variant run over one sequence: the engine's records and what the memory answered."""
    variant: str
    tokens: list
    records: list           # engine.stepping.StepRecord per token
    answers: list           # per token: an Answer
    candidates: list        # the values the read-out is decoded against
    columns: dict | None = None     # perpendicular keys: name → key column (None: random keys)
    # what pages derive from the run (texts per language, pictures' frames), kept with it: a shared run
    # (`shared_run`) is then drawn once per process, not once per visitor
    memo: dict = field(default_factory=dict, compare=False, repr=False)

    def derived(self, key, make):
        """make(), computed once per run and `key`."""
        if key not in self.memo:
            self.memo[key] = read_only(make())      # shared with every session that shows the run
        return self.memo[key]


def run_sequence(variant, tokens, *, heads=1, alpha=None, beta=None, seed=0, keys="random"):
    """Run `variant` over `tokens` with the engine's recurrent stepper; returns a `Run`.
    alpha, beta: the knobs (None: the variant's defaults); keys: "random" or "perpendicular"."""
    if variant not in REGISTRY:
        raise ValueError(f"unknown variant {variant!r}")
    if not tokens:
        raise ValueError("no tokens to run")
    if keys not in KEYS:
        raise ValueError(f"keys must be one of {KEYS}, not {keys!r}")
    columns = key_columns(tokens) if keys == "perpendicular" else None
    key_of = (lambda word, h: np.eye(D_K)[columns[word]]) if columns is not None \
        else (lambda word, h: embedding(word, "key", h, seed))
    alpha = REGISTRY[variant].alpha if alpha is None else alpha
    beta = REGISTRY[variant].beta if beta is None else beta
    T = len(tokens)
    q = torch.zeros(1, T, heads, D_K)
    k = torch.zeros(1, T, heads, D_K)
    v = torch.zeros(1, T, heads, D_V)
    for t, token in enumerate(tokens):
        for h in range(heads):
            if token.key is not None:
                q[0, t, h] = torch.from_numpy(key_of(token.key, h))
            if token.kind == "write":
                k[0, t, h] = torch.from_numpy(key_of(token.key, h))
                v[0, t, h] = torch.from_numpy(embedding(token.value, "value", h, seed))
    _o, _state, records = run(variant, q, k, v, scale=SCALE.get(variant, 1.0),
                              **make_gates(variant, (1, T, heads, D_K), alpha=alpha, beta=beta, keys=k))
    candidates = sorted({t.value for t in tokens if t.kind == "write"})
    return Run(variant, tokens, records, _answers(tokens, records, candidates, heads, seed), candidates, columns)


@shared_cache(maxsize=64)
def shared_run(variant, tokens, *, heads=1, alpha=None, beta=None, seed=0, keys="random"):
    """`run_sequence` once per process for the same arguments (`tokens` a tuple): a class that moves a
    knob to the same few places runs each of them once. Every caller gets the same `Run`: read it only."""
    return run_sequence(variant, list(tokens), heads=heads, alpha=alpha, beta=beta, seed=seed, keys=keys)


def _answers(tokens, records, candidates, heads, seed):
    """Decode each read-out: the stored value whose vector it points at best (cosine, mean over heads),
    or a tie (`decode`)."""
    table = np.stack([[embedding(c, "value", h, seed) for c in candidates] for h in range(heads)]) \
        if candidates else np.zeros((heads, 0, D_V))                                  # [H, C, d_v]
    latest, answers = {}, []
    for token, record in zip(tokens, records):
        if token.kind == "write":
            latest[token.key] = token.value
        expected = latest.get(token.key) if token.key is not None else None
        output = record.output[0]                                                       # [H, d_v]
        norms = np.linalg.norm(output, axis=-1)
        if token.key is None or not candidates or norms.max() < 1e-6:
            answers.append(Answer(None, 0.0, expected))
            continue
        cosine = np.einsum("hcd,hd->hc", table, output) / np.maximum(norms[:, None], 1e-12)
        value, similarity, tied = decode(cosine.mean(0), candidates, output.dtype)
        answers.append(Answer(value, similarity, expected, tied))
    return answers
