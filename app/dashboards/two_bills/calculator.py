"""Two bills, the calculator: the KV cache and the fixed state of real model shapes, in closed form
(no engine run), from published configurations."""
import math
from dataclasses import dataclass

import param

from lineare.app.i18n import N_

DTYPES = {"fp32": 4, "bf16": 2, "fp16": 2, "int8": 1}


@dataclass(frozen=True)
class ModelShape:
    """The published shape of a model: what its generation memory depends on."""
    name: str                  # a model's name: not translated
    kind: str                  # "softmax" (keeps a KV cache) or "state" (keeps a fixed state)
    layers: int
    heads: int
    kv_heads: int
    d_k: int
    d_v: int
    parameters: float          # published parameter count
    source: str                # where the numbers come from (names and numbers: not translated)
    note: str                  # msgid: what to know about this shape
    context: int | None = None  # the most tokens it was made to read (None: a fixed state, no such limit here)
    window: bool = False       # its cache keeps only the last `context` tokens (a sliding window)
    key_heads: int | None = None  # a softmax model of this shape caches fewer keys than values (shared keys)

    def shape(self):
        return {"layers": self.layers, "heads": self.heads, "kv_heads": self.kv_heads, "d_k": self.d_k,
                "d_v": self.d_v}


PRESETS = {
    "llama2_7b": ModelShape(
        "Llama-2-7B", "softmax", 32, 32, 32, 128, 128, 6.74e9,
        "Touvron et al. 2023; meta-llama/Llama-2-7b-hf, config.json",
        N_("Llama-2 was trained on texts of up to 4,096 tokens: past that, these are the formula's numbers, "
           "not something the model can use."), context=4096),
    "llama3_8b": ModelShape(                          # the key keeps its first name: links that name it still work
        "Llama-3.1-8B", "softmax", 32, 32, 8, 128, 128, 8.03e9,
        "Meta 2024; meta-llama/Llama-3.1-8B, config.json",
        N_("Grouped-query attention: the 32 query heads share 8 key-value heads, so the cache is 4 times "
           "smaller than with 32. Llama-3.1-8B reads up to 131,072 tokens; Llama-3-8B has the same shape "
           "and reads up to 8,192."), context=131072),
    "mistral_7b": ModelShape(
        "Mistral-7B", "softmax", 32, 32, 8, 128, 128, 7.24e9,
        "Jiang et al. 2023; mistralai/Mistral-7B-v0.1, config.json",
        N_("Mistral-7B v0.1 looks back only 4,096 tokens (a sliding window), so its rolling cache stops "
           "growing there: a bounded memory, paid for with a shorter view. Later versions (v0.2, v0.3) "
           "attend to up to 32,768 tokens, as computed here."), context=4096, window=True),
    "retnet_6_7b": ModelShape(
        "RetNet-6.7B", "state", 32, 16, 16, 256, 512, 6.7e9,
        "Sun et al. 2023, Tab. 2, §3.1",
        N_("RetNet-6.7B: 16 heads per layer, keys of size 256 and values of size 512 (twice as wide), so "
           "each head keeps a 512 × 256 state.")),
    "mamba2_2_7b": ModelShape(
        "Mamba-2-2.7B", "state", 64, 80, 80, 128, 64, 2.7e9,
        "Dao & Gu 2024; state-spaces/mamba2-2.7b (d_model 2560, expand 2, headdim 64, d_state 128)",
        N_("Mamba-2-2.7B: 64 layers of 80 heads (an inner width of 5,120 = 80 × 64), each head keeping a "
           "64 × 128 state (head size 64, state size 128). The short convolution's small buffer is left "
           "out. Its 80 heads share one B and one C (ngroups = 1), the key and query of attention: a softmax "
           "model of this shape would cache one key and 80 values per token and layer (multi-value "
           "attention, Dao & Gu 2024, §7)."), key_heads=1),
}
CUSTOM = "custom"


class CalculatorStore(param.Parameterized):
    """A model shape, a number format and a context length; the two bills follow in closed form."""

    preset = param.Selector(default="llama3_8b", objects=list(PRESETS) + [CUSTOM])
    layers = param.Integer(default=32, bounds=(1, 512))
    heads = param.Integer(default=32, bounds=(1, 1024), doc="query heads")
    kv_heads = param.Integer(default=8, bounds=(1, 1024), doc="key-value heads (grouped-query attention)")
    d_k = param.Integer(default=128, bounds=(1, 4096), doc="key (and query) size per head")
    d_v = param.Integer(default=128, bounds=(1, 4096), doc="value size per head")
    dtype = param.Selector(default="bf16", objects=list(DTYPES))
    context = param.Integer(default=131072, bounds=(1, 1_048_576), doc="tokens in the context")

    memory = param.Tuple(default=None, length=4, allow_None=True,
                         doc="(context, KV cache bytes, state bytes, weight bytes or None): the chart's data "
                             "(derived; changes once per change of the bills, however many settings moved)")

    URL = {"preset": "preset", "layers": "layers", "heads": "qheads", "kv_heads": "kvheads", "d_k": "dk",
           "d_v": "dv", "dtype": "dtype", "context": "n"}
    SHAPE = ("layers", "heads", "kv_heads", "d_k", "d_v")

    def __init__(self, **params):
        preset = params.get("preset", self.param.preset.default)
        if preset in PRESETS:                      # a preset fills in what the link does not say
            for name, value in PRESETS[preset].shape().items():
                params.setdefault(name, value)
        if params.get("kv_heads", 0) > params.get("heads", self.param.heads.default):
            params["kv_heads"] = params.get("heads", self.param.heads.default)
        super().__init__(**params)
        self._follow_shape()
        self.param.watch(self._bill, list(self.URL))
        self._bill()

    def shape(self):
        return {name: getattr(self, name) for name in self.SHAPE}

    @param.depends("preset", watch=True)
    def _apply_preset(self):
        if self.preset in PRESETS:
            self.param.update(**PRESETS[self.preset].shape())

    @param.depends("layers", "heads", "kv_heads", "d_k", "d_v", watch=True)
    def _follow_shape(self):
        if self.kv_heads > self.heads:             # more key-value heads than query heads means nothing
            self.kv_heads = self.heads
            return
        if self.preset in PRESETS and self.shape() != PRESETS[self.preset].shape():
            self.preset = CUSTOM

    def _bill(self, *_events):
        self.memory = (self.context, self.kv_cache_bytes(), self.state_bytes(), self.weight_bytes())

    @property
    def model(self):
        return PRESETS.get(self.preset)

    @property
    def bytes_per_number(self):
        return DTYPES[self.dtype]

    @property
    def key_heads(self):
        """Keys cached per token and layer: one per KV head, or the preset's fewer shared keys (Mamba-2's B)."""
        model = self.model
        return model.key_heads if model is not None and model.key_heads else self.kv_heads

    def kv_cache_bytes(self, context=None):
        """2·L·H_kv·d·n·b in general form: every layer keeps, per KV head, a key (d_k) and a value (d_v); with
        shared keys, L·(H_key·d_k + H_kv·d_v)·n·b."""
        context = self.context if context is None else context
        per_token = self.layers * (self.key_heads * self.d_k + self.kv_heads * self.d_v)
        return per_token * context * self.bytes_per_number

    def past_context(self, model=None):
        """True when the context is longer than what `model` (default: the preset's) was made to read."""
        model = self.model if model is None else model
        return model is not None and model.context is not None and self.context > model.context

    def state_bytes(self):
        """L·H·d_k·d_v·b: every layer keeps one d_v × d_k matrix per head, whatever the context."""
        return self.layers * self.heads * self.d_k * self.d_v * self.bytes_per_number

    def weight_bytes(self):
        """The weights of the chosen preset in this number format (None for a custom shape)."""
        return None if self.model is None else self.model.parameters * self.bytes_per_number

    def crossing(self):
        """Tokens from which the cache of this shape is bigger than its state."""
        return self.heads * self.d_k * self.d_v // (self.key_heads * self.d_k + self.kv_heads * self.d_v) + 1

    def weights_crossing(self):
        """Tokens from which the cache alone is bigger than the weights (None for a custom shape)."""
        weights = self.weight_bytes()
        return None if weights is None else math.ceil(weights / self.kv_cache_bytes(1))

    def multiply_adds(self):
        """Multiply-adds to read a prompt of n tokens, per head and layer: (softmax, fixed state).

        Softmax with the causal mask: token t scores the t keys so far (d_k each) and sums their values
        (d_v each), Σ_t t (d_k + d_v) = n(n+1)/2 · (d_k + d_v). A fixed state of the same shape: per
        token one write v kᵀ and one read S q, 2 d_k d_v (a decay adds only multiplications)."""
        n = self.context
        return n * (n + 1) // 2 * (self.d_k + self.d_v), 2 * n * self.d_k * self.d_v

    def whole_model(self, per_head):
        """A count per head and layer, for every (query) head of every layer."""
        return per_head * self.heads * self.layers

