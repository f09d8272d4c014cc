"""Dashboard "Architectures": named models as settings of one skeleton.

Every model keeps a state S (d_v × d_k) and per token does S_t = S_{t-1} A_t + W_t, o_t = S_t q_t.
The first screen shows what tells them apart, both read off the engine: how much of a pair written
at token 0 is left n tokens later (one forgetting curve per model) and the eigenvalues of each
transition A_t. Below, one card per architecture says what its transition and write are (the words
and formulas of the unified table, from its record in app.variants), what is special about it and
where it sits on the transition knob, with links that open "The state fills up" and "The transition
knob" on it.

- `model.py`: the transitions read off the engine's own step with gates from the one recipe, their
  eigenvalues and forgetting curves, and `ArchitecturesStore` (the highlighted model, `arch=`). No Panel.
- `pictures.py`: the forgetting curves and the eigenvalues (Bokeh).
- `view.py`: `ArchitecturesView` only draws: the pictures, the skeleton, the cards and their links.
"""
