"""Dashboard "Take away the softmax": the chapter's opening move, on one sentence of eight words.

Softmax attention answers word t with row t of a T × T table of weights,
o_t = Σ_{i≤t} softmax_i(q_tᵀk_i/√d) v_i, and needs every k_i, v_i for it (the KV cache). Replace
exp(qᵀk) by φ(q)ᵀφ(k), with φ = elu + 1 (Katharopoulos et al. 2020), and the sum regroups:
(φ(Q)φ(K)ᵀ ⊙ M)V row t equals S_t φ(q_t) / z_tᵀφ(q_t), with the d × d state
S_t = Σ_{i≤t} v_i φ(k_i)ᵀ and z_t = Σ_{i≤t} φ(k_i), both running sums. The page plays that regrouping
word by word (the table's row t beside the state S_t, and o_t both ways) and counts what the two
orders cost at length T: 2·T²·d multiply-adds for (QKᵀ)V against 2·T·d² for Q(KᵀV).

- `model.py`: the sentence's numbers (`attend`), the counts (`multiply_adds`) and `SoftmaxStore`. No Panel.
- `pictures.py`: the grid of numbered cells (table, state, notebook) and the cost picture.
- `view.py`: `SoftmaxView` arranges the page and sends each run to the browser's player.
"""
