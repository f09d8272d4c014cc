"""Dashboard "The transition knob": the unified table of the family made continuous.

Every model of the family rewrites its state as S_t = S_{t-1} · transition_t + write_t. The knob
spans the family with one rule,

    S_t = S_{t-1} D_t (I − β k_t k_tᵀ) + v_t k_tᵀ,     o_t = S_t q_t,

where D_t is I (no gate), α I (fixed), α_t I (scalar, one per token) or diag(α_t) (per channel),
and β ∈ [0, 1] is how much of what the memory says about k_t is erased before writing. The engine
runs it as a diagonal-plus-low-rank transition (its RWKV-7 step, with a = D_t k_t and b = −β k_t);
at the named settings it is exactly linear attention, RetNet, Mamba-2, GLA, DeltaNet, Gated
DeltaNet (tests/test_transition.py checks each against the engine's own variant). Between them the
knob writes the whole v kᵀ, where DeltaNet writes β v kᵀ: the two meet at β = 1. Which models are "on" the
knob, and which only close to it, is the registry's (app/variants.py: `knob`, `nearest`): RWKV-6 reads
before it writes, with a bonus u, so at GLA's setting the lamp says "close to RWKV-6"; mLSTM, at Mamba-2's,
has an input gate and a normalizer; Mamba-2's own skip D x is not on the knob (its `knob_note`). RWKV-7 is
off the knob: at gate "channel" with β > 0 the lamp says "close to RWKV-7", and the knob computes
diag(α_t) − β (α_t ⊙ k_t) k_tᵀ (fade, then erase), where RWKV-7 computes diag(w_t) − κ̂_t (a_t ⊙ κ̂_t)ᵀ
and writes v_t k̃_tᵀ.

Mechanism mode (app/mechanism.py): nothing is trained, so the gates come from the knobs and the
token's kind, through the one gate recipe (engine.gates.make_gates). A data-dependent gate fades the
memory only on tokens that write a pair (waits and questions leave it alone), the choice a trained
Mamba-2 gate makes on filler; per channel, each key dimension fades at its own speed around α.

- `model.py`: `TransitionStore` (one per session) holds the knobs, the sequence and the results: the
  knob's run (engine.ops.forward: final state and recall; engine.stepping.step records the transition
  at one token), and three named models on the same sequence for the small multiples. No Panel.
- `view.py`: `TransitionView` only draws the store; `pictures.py`: the recall picture, the answers
  and the unified table (one row per record of app.variants).

A knob turn costs a few milliseconds (at most 40 tokens, d = 16), so the store computes at once.
"""
