"""Writes `parallel_equals_recurrent.ipynb` (clean, no outputs) next to this file.

The notebook is the source students open; this script is how it is built, so that edits stay
reviewable as plain Python. Run it with any Python that has nbformat:

    .venv/bin/python notebooks/make_parallel_equals_recurrent.py
"""
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
TARGET = HERE / "parallel_equals_recurrent.ipynb"

# Each entry is ("md" | "code", source). Every markdown cell carries an **IT** and an **EN** paragraph.
CELLS = [
    ("md", r"""# Parallelo = ricorrente · Parallel = recurrent

**IT** Questo notebook verifica con numeri veri che la forma *ricorrente* (un token alla volta, con
uno stato di dimensione fissa) e la forma *parallela* (tutta la sequenza insieme, con una matrice
T×T) calcolano esattamente la stessa cosa, per tre modelli: l'attenzione lineare, una variante con
decadimento (stile Mamba-2 / RetNet) e DeltaNet. Poi costruisce la forma *a blocchi* (chunked), che
è parallela dentro ogni blocco e ricorrente da un blocco all'altro. Usa solo NumPy: è una seconda
implementazione, indipendente dal motore del progetto, e serve proprio a controllarlo.

**EN** This notebook checks with real numbers that the *recurrent* form (one token at a time, with a
fixed-size state) and the *parallel* form (the whole sequence at once, with a T×T matrix) compute
exactly the same thing, for three models: linear attention, a decaying variant (Mamba-2 / RetNet
style) and DeltaNet. It then builds the *chunked* form, which is parallel inside each block and
recurrent from one block to the next. It uses NumPy only: it is a second implementation,
independent of the project's engine, and its purpose is to cross-check it."""),

    ("md", r"""## Notazione · Notation

**IT** Lo stato è una matrice $S \in \mathbb{R}^{d_v \times d_k}$ e ogni modello lo aggiorna con lo
stesso schema $S_t = S_{t-1}\,\mathrm{transizione}_t + \mathrm{scrittura}_t$; l'uscita è
$o_t = S_t\,\tilde q_t$ con $\tilde q_t = q_t/\sqrt{d_k}$. Nel codice le matrici $Q, K, V$ hanno una
riga per token: la riga $t$ di $Q$ è $q_t^\top$. Scegliamo di proposito una lunghezza dispari
($T = 37$), $d_k \neq d_v$ (così un errore di trasposizione non passa inosservato), `float64` e un
generatore con seme fisso. Ogni confronto stampa la massima differenza assoluta e l'errore relativo
$\lVert a-b\rVert / \lVert b\rVert$, e si ferma con un errore se quest'ultimo supera $10^{-10}$.

**EN** The state is a matrix $S \in \mathbb{R}^{d_v \times d_k}$ and every model updates it with the
same pattern $S_t = S_{t-1}\,\mathrm{transition}_t + \mathrm{write}_t$; the output is
$o_t = S_t\,\tilde q_t$ with $\tilde q_t = q_t/\sqrt{d_k}$. In the code, $Q, K, V$ hold one row per
token: row $t$ of $Q$ is $q_t^\top$. We pick on purpose an odd length ($T = 37$), $d_k \neq d_v$ (so
a transposition mistake cannot hide), `float64` and a seeded generator. Every comparison prints the
largest absolute difference and the relative error $\lVert a-b\rVert / \lVert b\rVert$, and stops
with an error if the latter exceeds $10^{-10}$."""),

    ("code", r"""import numpy as np

T, d_k, d_v = 37, 8, 5             # odd length, d_k ≠ d_v
rng = np.random.default_rng(2024)  # seeded: the same numbers on every run
Q = rng.standard_normal((T, d_k))  # float64 by default
K = rng.standard_normal((T, d_k))
V = rng.standard_normal((T, d_v))
scale = 1 / np.sqrt(d_k)           # q̃ = q / √d_k
TOL = 1e-10


def compare(name, a, b, tol=TOL):
    # print max |a − b| and ‖a − b‖ / ‖b‖; stop if the relative error is not below tol
    assert a.shape == b.shape, (name, a.shape, b.shape)
    max_abs = np.max(np.abs(a - b))
    rel = np.linalg.norm(a - b) / np.linalg.norm(b)
    print(f"{name:<44} max|diff| = {max_abs:.2e}   rel. error = {rel:.2e}")
    assert rel < tol, f"{name}: relative error {rel:.2e} is not below {tol:.0e}"


print(Q.dtype, Q.shape, K.shape, V.shape)"""),

    ("md", r"""## 1. Attenzione lineare · Linear attention

**IT** La transizione è l'identità: lo stato accumula soltanto, $S_t = S_{t-1} + v_t k_t^\top$, e si
legge con $o_t = S_t \tilde q_t$. La forma ricorrente è un ciclo sui token: a ogni passo una
scrittura e una lettura, e in memoria c'è solo $S$ (d_v×d_k numeri), qualunque sia $T$.

**EN** The transition is the identity: the state only accumulates, $S_t = S_{t-1} + v_t k_t^\top$,
and is read with $o_t = S_t \tilde q_t$. The recurrent form is a loop over tokens: one write and
one read per step, and the only thing kept in memory is $S$ (d_v×d_k numbers), whatever $T$ is."""),

    ("code", r"""def linear_recurrent(Q, K, V, scale):
    S = np.zeros((V.shape[1], K.shape[1]))   # d_v × d_k
    O = np.zeros((len(Q), V.shape[1]))
    for t in range(len(Q)):
        S = S + np.outer(V[t], K[t])         # write v_t k_tᵀ (transition = I)
        O[t] = S @ (scale * Q[t])            # read o_t = S_t q̃_t
    return O, S


O_rec, S_rec = linear_recurrent(Q, K, V, scale)
print(O_rec.shape, S_rec.shape)"""),

    ("md", r"""**IT** Srotoliamo la somma: $S_t = \sum_{j \le t} v_j k_j^\top$, quindi
$o_t = \sum_{j \le t} v_j\,(k_j^\top \tilde q_t)$. Il numero $k_j^\top \tilde q_t$ è l'elemento
$(t, j)$ di $\tilde Q K^\top$; la condizione $j \le t$ è la maschera causale $M$ (1 sotto e sulla
diagonale, 0 sopra). Dunque, tutto insieme: $O = (\tilde Q K^\top \odot M)\,V$. È l'attenzione
senza softmax, calcolata con due prodotti di matrici. Lo stato finale è $S_T = V^\top K$.

**EN** Unroll the sum: $S_t = \sum_{j \le t} v_j k_j^\top$, hence
$o_t = \sum_{j \le t} v_j\,(k_j^\top \tilde q_t)$. The number $k_j^\top \tilde q_t$ is entry
$(t, j)$ of $\tilde Q K^\top$; the condition $j \le t$ is the causal mask $M$ (1 on and below the
diagonal, 0 above). So, all at once: $O = (\tilde Q K^\top \odot M)\,V$. It is attention without the
softmax, computed with two matrix products. The final state is $S_T = V^\top K$."""),

    ("code", r"""def linear_parallel(Q, K, V, scale):
    M = np.tril(np.ones((len(Q), len(Q))))   # causal mask: M[i, j] = 1 if j ≤ i
    A = (scale * Q) @ K.T * M                # A[i, j] = q̃_iᵀ k_j for j ≤ i, else 0
    return A @ V, V.T @ K                    # outputs, final state Σ_j v_j k_jᵀ


O_par, S_par = linear_parallel(Q, K, V, scale)
compare("linear: parallel vs recurrent (outputs)", O_par, O_rec)
compare("linear: parallel vs recurrent (final S)", S_par, S_rec)"""),

    ("md", r"""## 2. Decadimento scalare (Mamba-2 / RetNet) · Scalar decay (Mamba-2 / RetNet)

**IT** Ora la transizione è $\alpha_t I$ con $\alpha_t = e^{g_t} \in (0, 1]$, cioè
$g_t = \log \alpha_t \le 0$: prima di scrivere, lo stato sbiadisce,
$S_t = \alpha_t S_{t-1} + v_t k_t^\top$. Srotolando, ciò che è stato scritto al passo $j$ arriva al
passo $i$ moltiplicato per $\alpha_{j+1}\cdots\alpha_i$, quindi
$O = (\tilde Q K^\top \odot L)\,V$ con la maschera di decadimento
$L_{ij} = \exp\big(\sum_{s=j+1}^{i} g_s\big)$ per $j \le i$ e $0$ sopra la diagonale (con
$\alpha_t = 1$ si ritrova $M$). Usiamo due regimi: decadimento lieve, come in un modello addestrato,
e forte, con $g_t$ fino a $-5$ per passo.

**EN** Now the transition is $\alpha_t I$ with $\alpha_t = e^{g_t} \in (0, 1]$, that is
$g_t = \log \alpha_t \le 0$: before writing, the state fades, $S_t = \alpha_t S_{t-1} + v_t k_t^\top$.
Unrolling, what was written at step $j$ reaches step $i$ multiplied by $\alpha_{j+1}\cdots\alpha_i$,
so $O = (\tilde Q K^\top \odot L)\,V$ with the decay mask
$L_{ij} = \exp\big(\sum_{s=j+1}^{i} g_s\big)$ for $j \le i$ and $0$ above the diagonal (with
$\alpha_t = 1$ we get $M$ back). We use two regimes: mild decay, as in a trained model, and strong
decay, with $g_t$ down to $-5$ per step."""),

    ("code", r"""g_mild = -np.logaddexp(0, -(rng.standard_normal(T) + 3))  # log σ(x + 3): α close to 1
g_strong = -5 * rng.random(T)                             # log decay in (−5, 0]
print("mild   α in", np.exp(g_mild).min().round(3), "…", np.exp(g_mild).max().round(3))
print("strong α in", np.exp(g_strong).min().round(4), "…", np.exp(g_strong).max().round(3))"""),

    ("md", r"""**IT** Come si calcola $L$ senza problemi numerici? La strada ingenua è dividere prodotti cumulativi,
$L_{ij} = P_i / P_j$ con $P_i = \alpha_1 \cdots \alpha_i$: ma $P_i$ scende verso zero in fretta,
va in underflow e dà $0/0$. Noi invece restiamo nello spazio dei logaritmi e sommiamo direttamente i
$g_s$ del segmento $j+1..i$ (*segment sum*): si ripete $g$ in colonne, si azzera tutto tranne la
parte strettamente sotto la diagonale e si fa una somma cumulativa lungo le righe. Ogni esponente è
$\le 0$, quindi $e^{(\cdot)} \in [0, 1]$: nessuna divisione, nessun overflow.

**EN** How do we compute $L$ without numerical trouble? The naive way divides cumulative products,
$L_{ij} = P_i / P_j$ with $P_i = \alpha_1 \cdots \alpha_i$: but $P_i$ drops towards zero quickly,
underflows and yields $0/0$. Instead we stay in log space and add up the $g_s$ of the segment
$j+1..i$ directly (*segment sum*): repeat $g$ across columns, zero everything except the part
strictly below the diagonal, and take a cumulative sum down the rows. Every exponent is $\le 0$, so
$e^{(\cdot)} \in [0, 1]$: no division, no overflow."""),

    ("code", r"""def segsum(g):
    # out[i, j] = g_{j+1} + … + g_i for j ≤ i (0 on the diagonal), −∞ above it
    n = len(g)
    G = np.repeat(g[:, None], n, axis=1)                    # G[i, j] = g_i
    G = np.where(np.tril(np.ones((n, n), bool), -1), G, 0)  # keep only i > j
    out = np.cumsum(G, axis=0)                              # Σ_{s = j+1..i} g_s
    return np.where(np.tril(np.ones((n, n), bool)), out, -np.inf)


g_small = np.log(np.array([0.5, 0.9, 0.8, 0.7]))
print(np.exp(segsum(g_small)).round(3))   # row i: how much of each past write is left at step i"""),

    ("code", r"""g_huge = np.full(T, -30.0)               # α = e^(-30): P_i underflows to 0 after ~25 steps
P = np.cumprod(np.exp(g_huge))
with np.errstate(invalid="ignore", divide="ignore"):
    L_naive = np.tril(P[:, None] / P[None, :])
L_stable = np.exp(segsum(g_huge))
print("naive  (ratio of cumulative products): NaN entries =", np.isnan(L_naive).sum())
print("stable (segment sum in log space):     NaN entries =", np.isnan(L_stable).sum(),
      "| diagonal all 1:", np.all(np.diag(L_stable) == 1))
assert np.all(np.isfinite(L_stable))"""),

    ("code", r"""def decay_recurrent(Q, K, V, g, scale):
    S = np.zeros((V.shape[1], K.shape[1]))
    O = np.zeros((len(Q), V.shape[1]))
    for t in range(len(Q)):
        S = np.exp(g[t]) * S + np.outer(V[t], K[t])   # fade, then write
        O[t] = S @ (scale * Q[t])
    return O, S


def decay_parallel(Q, K, V, g, scale):
    L = np.exp(segsum(g))                    # decay mask, 0 above the diagonal
    O = ((scale * Q) @ K.T * L) @ V
    S = (V * L[-1][:, None]).T @ K           # S_T = Σ_j L[T-1, j] v_j k_jᵀ
    return O, S


for name, g in [("mild", g_mild), ("strong", g_strong)]:
    O_r, S_r = decay_recurrent(Q, K, V, g, scale)
    O_p, S_p = decay_parallel(Q, K, V, g, scale)
    compare(f"decay ({name}): parallel vs recurrent (O)", O_p, O_r)
    compare(f"decay ({name}): parallel vs recurrent (S)", S_p, S_r)"""),

    ("md", r"""## 3. DeltaNet

**IT** DeltaNet non si limita ad aggiungere: prima corregge ciò che lo stato già dice sulla chiave
$k_t$. La regola è $S_t = S_{t-1}(I - \beta_t k_t k_t^\top) + \beta_t v_t k_t^\top$, con
$\beta_t \in (0, 1)$ e chiavi di norma 1. Riscritta, è
$S_t = S_{t-1} + \beta_t\,(v_t - S_{t-1} k_t)\,k_t^\top$: $S_{t-1}k_t$ è la *previsione* dello stato
per la chiave $k_t$, $v_t$ il *bersaglio*, e si scrive una frazione $\beta_t$ dell'errore (un passo
di discesa del gradiente su $\tfrac12\lVert S k_t - v_t\rVert^2$). Chiamiamo
$u_t = \beta_t (v_t - S_{t-1} k_t)$ lo *pseudo-valore* effettivamente scritto; la forma ricorrente
lo registra, ci servirà tra poco.

**EN** DeltaNet does not just add: it first corrects what the state already says about the key
$k_t$. The rule is $S_t = S_{t-1}(I - \beta_t k_t k_t^\top) + \beta_t v_t k_t^\top$, with
$\beta_t \in (0, 1)$ and unit-norm keys. Rewritten, it is
$S_t = S_{t-1} + \beta_t\,(v_t - S_{t-1} k_t)\,k_t^\top$: $S_{t-1}k_t$ is the state's *prediction*
for key $k_t$, $v_t$ is the *target*, and a fraction $\beta_t$ of the error is written (one gradient
descent step on $\tfrac12\lVert S k_t - v_t\rVert^2$). We call $u_t = \beta_t (v_t - S_{t-1} k_t)$
the *pseudo-value* actually written; the recurrent form records it, we will need it shortly."""),

    ("code", r"""def l2_normalise(X):
    return X / np.linalg.norm(X, axis=1, keepdims=True)


Qn, Kn = l2_normalise(Q), l2_normalise(K)           # DeltaNet layers normalise q and k
beta = 1 / (1 + np.exp(-rng.standard_normal(T)))    # β_t = sigmoid(·) ∈ (0, 1)


def deltanet_recurrent(Q, K, V, beta, scale):
    S = np.zeros((V.shape[1], K.shape[1]))
    O = np.zeros((len(Q), V.shape[1]))
    U = np.zeros((len(Q), V.shape[1]))
    for t in range(len(Q)):
        U[t] = beta[t] * (V[t] - S @ K[t])           # β_t (target − prediction)
        S = S + np.outer(U[t], K[t])                 # = S(I − β k kᵀ) + β v kᵀ
        O[t] = S @ (scale * Q[t])
    return O, S, U


O_drec, S_drec, U_drec = deltanet_recurrent(Qn, Kn, V, beta, scale)
print(O_drec.shape, "| largest |u_t|:", np.abs(U_drec).max().round(3))"""),

    ("md", r"""**IT** *Derivazione della forma parallela (rappresentazione WY/UT).* Poiché
$S_t = S_{t-1} + u_t k_t^\top$ e $S_0 = 0$, lo stato è una somma come nell'attenzione lineare, ma di
pseudo-valori: $S_t = \sum_{j \le t} u_j k_j^\top$. Quindi
$o_t = \sum_{j \le t} u_j (k_j^\top \tilde q_t)$, cioè $O = (\tilde Q K^\top \odot M)\,U$. Resta da
trovare $U$ senza ciclo. Mettiamo la somma dentro la definizione di $u_t$:
$S_{t-1} k_t = \sum_{j<t} u_j\,(k_t^\top k_j)$, quindi
$u_t + \beta_t \sum_{j<t} (k_t^\top k_j)\,u_j = \beta_t v_t$. Per tutte le righe insieme:
$$\big(I + \mathrm{tril}(\mathrm{diag}(\beta)\,K K^\top, -1)\big)\,U = \mathrm{diag}(\beta)\,V .$$
La matrice $A$ a sinistra è triangolare inferiore con diagonale di 1: è sempre invertibile e si
risolve per sostituzione in avanti. Se lo stato iniziale è $S_0 \ne 0$ (ci servirà per i blocchi),
la previsione contiene anche $S_0 k_t$: il lato destro diventa
$\mathrm{diag}(\beta)(V - K S_0^\top)$, all'uscita si aggiunge $\tilde Q S_0^\top$ e lo stato finale
è $S_0 + U^\top K$.

**EN** *Deriving the parallel form (WY/UT representation).* Since $S_t = S_{t-1} + u_t k_t^\top$ and
$S_0 = 0$, the state is a sum as in linear attention, but of pseudo-values:
$S_t = \sum_{j \le t} u_j k_j^\top$. Hence $o_t = \sum_{j \le t} u_j (k_j^\top \tilde q_t)$, that is
$O = (\tilde Q K^\top \odot M)\,U$. What is left is finding $U$ without a loop. Put the sum into the
definition of $u_t$: $S_{t-1} k_t = \sum_{j<t} u_j\,(k_t^\top k_j)$, so
$u_t + \beta_t \sum_{j<t} (k_t^\top k_j)\,u_j = \beta_t v_t$. For all rows at once:
$$\big(I + \mathrm{tril}(\mathrm{diag}(\beta)\,K K^\top, -1)\big)\,U = \mathrm{diag}(\beta)\,V .$$
The matrix $A$ on the left is lower triangular with ones on the diagonal: it is always invertible
and is solved by forward substitution. If the initial state is $S_0 \ne 0$ (we will need it for
chunks), the prediction also contains $S_0 k_t$: the right-hand side becomes
$\mathrm{diag}(\beta)(V - K S_0^\top)$, the output gains $\tilde Q S_0^\top$, and the final state is
$S_0 + U^\top K$."""),

    ("code", r"""def deltanet_parallel(Q, K, V, beta, scale, S0=None):
    n = len(Q)
    S0 = np.zeros((V.shape[1], K.shape[1])) if S0 is None else S0
    A = np.eye(n) + np.tril(beta[:, None] * (K @ K.T), -1)  # unit lower triangular
    U = np.linalg.solve(A, beta[:, None] * (V - K @ S0.T))  # pseudo-values, one row per token
    M = np.tril(np.ones((n, n)))
    O = (scale * Q) @ S0.T + ((scale * Q) @ K.T * M) @ U
    return O, S0 + U.T @ K, U


O_dpar, S_dpar, U_dpar = deltanet_parallel(Qn, Kn, V, beta, scale)
compare("deltanet: parallel vs recurrent (O)", O_dpar, O_drec)
compare("deltanet: parallel vs recurrent (S)", S_dpar, S_drec)
compare("deltanet: solved U vs recorded u_t", U_dpar, U_drec)"""),

    ("md", r"""## 4. La forma a blocchi · The chunked form

**IT** Perché la forma a blocchi è *entrambe* le cose? Tagliamo la sequenza in blocchi di $C$ token.
Dentro un blocco, l'uscita ha due parti: ciò che arriva dal passato, letto da uno stato $S$ con un
solo prodotto di matrici ($\tilde Q_c S^\top$), e ciò che si scrive nel blocco stesso, calcolato in
forma parallela su una piccola matrice $C \times C$. Poi lo stato passa al blocco successivo, come
nella ricorrenza, ma una volta per blocco invece che una per token. Con $C = 1$ si ritrova la
ricorrente, con $C \ge T$ la parallela. Scegliamo $T = 37$ che *non* è multiplo di $C$: l'ultimo
blocco è più corto e deve funzionare lo stesso.

**EN** Why is the chunked form *both*? Cut the sequence into chunks of $C$ tokens. Inside a chunk the
output has two parts: what comes from the past, read from a state $S$ with a single matrix product
($\tilde Q_c S^\top$), and what is written inside the chunk itself, computed in parallel form on a
small $C \times C$ matrix. Then the state is handed to the next chunk, as in the recurrence, but
once per chunk instead of once per token. With $C = 1$ we get the recurrent form back, with
$C \ge T$ the parallel one. We keep $T = 37$, which is *not* a multiple of $C$: the last chunk is
shorter and must still work."""),

    ("code", r"""def linear_chunked(Q, K, V, scale, C):
    S = np.zeros((V.shape[1], K.shape[1]))
    O = np.zeros((len(Q), V.shape[1]))
    for a in range(0, len(Q), C):                 # the last chunk may be shorter than C
        q, k, v = scale * Q[a:a + C], K[a:a + C], V[a:a + C]
        M = np.tril(np.ones((len(q), len(q))))
        O[a:a + C] = q @ S.T + (q @ k.T * M) @ v  # past (via the state) + present (parallel)
        S = S + v.T @ k                           # recurrent step: hand S to the next chunk
    return O, S


C = 8
O_chk, S_chk = linear_chunked(Q, K, V, scale, C)
compare(f"linear: chunked (C={C}) vs recurrent (O)", O_chk, O_rec)
compare(f"linear: chunked (C={C}) vs parallel (O)", O_chk, O_par)
compare(f"linear: chunked (C={C}) vs recurrent (S)", S_chk, S_rec)"""),

    ("code", r"""# the chunk size is a dial between the two forms: C = 1 is recurrent, C ≥ T is parallel
for c in [1, 4, 10, 36, 37, 64]:
    compare(f"linear: chunked (C={c}) vs parallel", linear_chunked(Q, K, V, scale, c)[0], O_par)"""),

    ("md", r"""**IT** Con il decadimento cambiano due cose. Il passato, letto dallo stato all'inizio del blocco, va
smorzato di quanto è decaduto fino alla posizione $i$: un fattore $e^{b_i}$, con $b_i$ la somma dei
$g$ del blocco fino a $i$. E lo stato passato al blocco dopo è
$e^{b_{\text{fine}}} S + \sum_j L_{\text{fine},j}\, v_j k_j^\top$, dove la riga finale di $L$ viene
dalla stessa segment sum. Tutti gli esponenti sono $\le 0$: anche qui nessuna divisione.

**EN** With decay two things change. The past, read from the state at the start of the chunk, must be
damped by how much it has decayed up to position $i$: a factor $e^{b_i}$, with $b_i$ the sum of the
chunk's $g$ up to $i$. And the state handed to the next chunk is
$e^{b_{\text{end}}} S + \sum_j L_{\text{end},j}\, v_j k_j^\top$, where the last row of $L$ comes from
the same segment sum. Every exponent is $\le 0$: here too, no division."""),

    ("code", r"""def decay_chunked(Q, K, V, g, scale, C):
    S = np.zeros((V.shape[1], K.shape[1]))
    O = np.zeros((len(Q), V.shape[1]))
    for a in range(0, len(Q), C):
        q, k, v, gc = scale * Q[a:a + C], K[a:a + C], V[a:a + C], g[a:a + C]
        b = np.cumsum(gc)                         # decay from the chunk start to each i (≤ 0)
        L = np.exp(segsum(gc))                    # decay mask inside the chunk
        O[a:a + C] = np.exp(b)[:, None] * (q @ S.T) + (q @ k.T * L) @ v
        S = np.exp(b[-1]) * S + (v * L[-1][:, None]).T @ k
    return O, S


for name, g in [("mild", g_mild), ("strong", g_strong)]:
    O_r, S_r = decay_recurrent(Q, K, V, g, scale)
    O_p, _ = decay_parallel(Q, K, V, g, scale)
    O_c, S_c = decay_chunked(Q, K, V, g, scale, C)
    compare(f"decay ({name}): chunked vs recurrent (O)", O_c, O_r)
    compare(f"decay ({name}): chunked vs parallel (O)", O_c, O_p)
    compare(f"decay ({name}): chunked vs recurrent (S)", S_c, S_r)"""),

    ("md", r"""**IT** Per DeltaNet basta la forma parallela con stato iniziale $S_0$ ricavata sopra: ogni blocco
risolve un piccolo sistema triangolare $C \times C$ partendo dallo stato lasciato dal blocco
precedente, e restituisce il proprio stato finale $S_0 + U^\top K$.

**EN** For DeltaNet, the parallel form with an initial state $S_0$ derived above is all we need: each
chunk solves a small $C \times C$ triangular system starting from the state left by the previous
chunk, and returns its own final state $S_0 + U^\top K$."""),

    ("code", r"""def deltanet_chunked(Q, K, V, beta, scale, C):
    S = np.zeros((V.shape[1], K.shape[1]))
    O = np.zeros((len(Q), V.shape[1]))
    for a in range(0, len(Q), C):
        O[a:a + C], S, _ = deltanet_parallel(Q[a:a + C], K[a:a + C], V[a:a + C],
                                             beta[a:a + C], scale, S0=S)
    return O, S


O_dchk, S_dchk = deltanet_chunked(Qn, Kn, V, beta, scale, C)
compare(f"deltanet: chunked (C={C}) vs recurrent (O)", O_dchk, O_drec)
compare(f"deltanet: chunked (C={C}) vs parallel (O)", O_dchk, O_dpar)
compare(f"deltanet: chunked (C={C}) vs recurrent (S)", S_dchk, S_drec)"""),

    ("md", r"""## 5. Il costo · The cost

**IT** Stesso risultato, conti diversi. Contiamo le moltiplicazioni (per strato e per testa) con
$d_k = d_v = 64$ e blocchi da $C = 64$. La parallela costruisce la matrice $T \times T$:
circa $T^2 (d_k + d_v)$ operazioni e $T^2$ numeri in memoria. La ricorrente fa a ogni token una
scrittura e una lettura: circa $2\,T\,d_k d_v$ operazioni e solo $d_k d_v$ numeri di stato, ma $T$
passi uno dopo l'altro, ciascuno troppo piccolo per tenere occupata una GPU. La forma a blocchi
costa circa $T\,C\,(d_k + d_v) + 2\,T\,d_k d_v$: lineare in $T$ come la ricorrente (con qualche
conto in più), ma fatta di prodotti di matrici come la parallela, e con solo $T / C$ passi in
sequenza.

**EN** Same result, different bills. We count multiplications (per layer and head) with
$d_k = d_v = 64$ and chunks of $C = 64$. The parallel form builds the $T \times T$ matrix: about
$T^2 (d_k + d_v)$ operations and $T^2$ numbers in memory. The recurrent form does one write and one
read per token: about $2\,T\,d_k d_v$ operations and only $d_k d_v$ state numbers, but $T$ steps one
after another, each too small to keep a GPU busy. The chunked form costs about
$T\,C\,(d_k + d_v) + 2\,T\,d_k d_v$: linear in $T$ like the recurrent one (with somewhat more
arithmetic), yet made of matrix products like the parallel one, with only $T / C$ sequential steps."""),

    ("code", r"""dk = dv = Cc = 64
print(f"{'T':>9} {'parallel ~T²':>14} {'recurrent ~T':>14} {'chunked ~T':>14} {'par/rec':>9}"
      f" {'seq. steps rec/chk':>19}")
for n in [64, 512, 4096, 32768, 262144]:
    par = n * n * (dk + dv)                 # Q̃Kᵀ (n² d_k) then (· ⊙ mask) V (n² d_v)
    rec = n * 2 * dk * dv                   # per token: write v kᵀ, read S q̃
    chk = n * Cc * (dk + dv) + n * 2 * dk * dv
    print(f"{n:>9} {par:>14.2e} {rec:>14.2e} {chk:>14.2e} {par / rec:>9.1f}"
          f" {n:>10} / {-(-n // Cc):<7}")"""),

    ("md", r"""## Riepilogo · Summary

**IT** Tre modelli, tre forme, un solo risultato: le differenze stampate sopra sono dell'ordine
dell'arrotondamento in `float64` (errori relativi ben sotto $10^{-10}$). La forma parallela è una
riscrittura esatta della ricorrenza: per l'attenzione lineare una maschera causale, per il
decadimento una maschera $L$ calcolata con la segment sum, per DeltaNet un sistema triangolare che
produce gli pseudo-valori $u_t$. La forma a blocchi unisce le due, e il suo unico ingrediente nuovo
è lo stato passato da un blocco all'altro.

**EN** Three models, three forms, one result: the differences printed above are at the level of
`float64` rounding (relative errors well below $10^{-10}$). The parallel form is an exact rewriting
of the recurrence: for linear attention a causal mask, for decay a mask $L$ computed with the segment
sum, for DeltaNet a triangular system that yields the pseudo-values $u_t$. The chunked form joins
the two, and its only new ingredient is the state handed from one chunk to the next."""),
]


def build(cells=None):
    """The notebook of `cells` ([(kind, source)], kind "md" or "code"; this file's own by default)."""
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    for i, (kind, source) in enumerate(cells or CELLS, start=1):
        cell = new_markdown_cell(source) if kind == "md" else new_code_cell(source)
        cell["id"] = f"cell-{i:02d}"     # stable ids: rebuilding gives the same file
        nb.cells.append(cell)
    nbformat.validate(nb)
    return nb


if __name__ == "__main__":
    nbformat.write(build(), TARGET)
    print(f"wrote {TARGET}")
