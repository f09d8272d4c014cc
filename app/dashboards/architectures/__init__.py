"""Dashboard "Architectures": named models as settings of one skeleton.

Every model keeps a state S (d_v × d_k) and per token does S_t = S_{t-1} A_t + W_t, o_t = S_t q_t.
One card per architecture says what its transition A_t and write W_t are (the words and formulas of
the unified table, from its record in app.variants), what is special about it, where it sits on the
transition knob, and shows A_t for one token as a heat map, with links that open "The state fills
up" and "The transition knob" on it.

- `model.py`: the pictures, read off the engine's own step with gates from the one recipe, and
  `ArchitecturesStore` (which model is filled into the skeleton, `arch=`). No Panel.
- `view.py`: `ArchitecturesView` only draws: the skeleton, the cards and their links.
"""
