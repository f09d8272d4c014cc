"""TinyLM: a tiny language model around one mixer variant (engine/README.md, "Tasks and checkpoints").

    tokens ─ embedding ─ n_layers × [ x + mixer(norm(x)),  x + mlp(norm(x)) ] ─ norm ─ head ─ logits

`model(tokens)` runs whole sequences with the engine's chunked form (training, evaluation);
`model.step(token, cache)` runs one token and returns the engine's StepRecord of every layer,
for the app to draw.
"""
from dataclasses import asdict, dataclass, fields

import torch
import torch.nn as nn
import torch.nn.functional as F

from lineare.engine.layers import FEATURE_MAPS, LAYERS, make_layer


@dataclass
class ModelConfig:
    variant: str = "deltanet"
    vocab_size: int = 256
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 1
    d_k: int | None = None          # key/query size per head (Mamba-2: d_state); default d_model // n_heads
    d_v: int | None = None          # value size per head; default d_model // n_heads
    mlp: bool = False               # a GELU MLP after each mixer
    mlp_ratio: int = 4
    conv_size: int = 4              # the short causal convolution before each mixer
    feature_map: str = "elu1"       # linear attention only: elu1 | relu | identity
    normalize: bool = False         # linear attention only: divide the read-out by z·φ(q)
    allow_neg_eigval: bool = False  # DeltaNet, Gated DeltaNet: β ∈ (0, 2) instead of (0, 1)
    gate_rank: int = 16             # GLA, RWKV-6/7: rank of the data-dependent gate projection
    chunk_size: int = 64            # chunk of the engine's chunked form (training)

    def __post_init__(self):
        if self.variant not in LAYERS:
            raise ValueError(f"unknown variant {self.variant!r}; choose one of {', '.join(LAYERS)}")
        if self.feature_map not in FEATURE_MAPS:
            raise ValueError(f"unknown feature map {self.feature_map!r}; choose one of {', '.join(FEATURE_MAPS)}")
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "conv_size", "chunk_size", "mlp_ratio",
                     "gate_rank"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, not {value!r}")
        if self.d_k is None or self.d_v is None:
            if self.d_model % self.n_heads:
                raise ValueError(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}; "
                                 "give d_k and d_v explicitly")
            self.d_k = self.d_model // self.n_heads if self.d_k is None else self.d_k
            self.d_v = self.d_model // self.n_heads if self.d_v is None else self.d_v
        for name in ("d_k", "d_v"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, not {value!r}")

    @classmethod
    def from_dict(cls, data):
        """A config from its JSON form; unknown or missing-but-required keys are a ValueError."""
        if not isinstance(data, dict):
            raise ValueError(f"a model config must be a JSON object, not {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown model config keys: {', '.join(unknown)}")
        return cls(**data)

    def to_dict(self):
        return asdict(self)


class MLP(nn.Module):
    def __init__(self, d_model, ratio):
        super().__init__()
        self.up, self.down = nn.Linear(d_model, ratio * d_model), nn.Linear(ratio * d_model, d_model)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        c = config
        self.mixer_norm = nn.RMSNorm(c.d_model)
        self.mixer = make_layer(c.variant, c.d_model, c.n_heads, c.d_k, c.d_v, conv_size=c.conv_size,
                                chunk_size=c.chunk_size, feature_map=c.feature_map, normalize=c.normalize,
                                allow_neg_eigval=c.allow_neg_eigval, gate_rank=c.gate_rank)
        self.mlp_norm = nn.RMSNorm(c.d_model) if c.mlp else None
        self.mlp = MLP(c.d_model, c.mlp_ratio) if c.mlp else None

    def feed_forward(self, x):
        return x if self.mlp is None else x + self.mlp(self.mlp_norm(x))

    def forward(self, x, return_state=False):
        y, state = self.mixer(self.mixer_norm(x), return_state=True)
        x = self.feed_forward(x + y)
        return (x, state) if return_state else x

    def step(self, x_t, cache):
        y, cache, record = self.mixer.step(self.mixer_norm(x_t), cache)
        return self.feed_forward(x_t + y), cache, record


class TinyLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embedding = nn.Embedding(config.vocab_size, config.d_model)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layers))
        self.norm = nn.RMSNorm(config.d_model)
        self.head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        nn.init.normal_(self.embedding.weight, std=0.02)

    def forward(self, tokens, return_states=False):
        """tokens int64 [B,T] → logits [B,T,V] (and each layer's final engine state)."""
        x, states = self.hidden(tokens)
        logits = self.head(x)                                                    # [B,T,V]
        return (logits, states) if return_states else logits

    def hidden(self, tokens):
        """tokens [B,T] → (final normalized hidden states [B,T,D], each layer's final engine state)."""
        x = self.embedding(tokens)                                               # [B,T,D]
        states = []
        for block in self.blocks:
            x, state = block(x, return_state=True)
            states.append(state)
        return self.norm(x), states

    def init_cache(self, batch=1):
        return [block.mixer.init_cache(batch) for block in self.blocks]

    @torch.no_grad()
    def step(self, token, cache=None):
        """token int64 [B] → (logits [B,V], cache, [StepRecord per layer; arrays lead with [B,H]])."""
        cache = cache if cache is not None else self.init_cache(token.shape[0])
        x = self.embedding(token)                                                # [B,D]
        new_cache, records = [], []
        for block, layer_cache in zip(self.blocks, cache):
            x, layer_cache, record = block.step(x, layer_cache)
            new_cache.append(layer_cache)
            records.append(record)
        return self.head(self.norm(x)), new_cache, records

    def num_parameters(self):
        return sum(p.numel() for p in self.parameters())
