"""Writes `laboratories.ipynb` (clean, no outputs) next to this file: every laboratory in a cell, then the
engine's records and sweeps with HoloViews (lineare/charts.py). Needs Lineare installed (`pip install .`).

    .venv/bin/python notebooks/make_laboratories.py
"""
from pathlib import Path

import nbformat
from make_parallel_equals_recurrent import build as notebook_of     # the same skeleton, with stable ids

HERE = Path(__file__).resolve().parent
TARGET = HERE / "laboratories.ipynb"

# ("md" | "code", source); every markdown cell has an **IT** and an **EN** paragraph
CELLS = [
    ("md", r"""# I laboratori in un notebook · The laboratories in a notebook

**IT** Ogni laboratorio di Lineare è un componente Panel: la stessa vista e le stesse manopole della
pagina, dentro una cella. Le impostazioni sono i parametri del laboratorio, con nomi Python (`d_k=16`;
anche le chiavi del link della pagina, come `dk`, vanno bene), `lang`
sceglie la lingua (`"it"` o `"en"`) e `level` il livello (`"elementare"` o `"superiore"`). Il player e le
manopole funzionano come nell'app: i calcoli girano nel kernel. In fondo, i record del motore e gli
esperimenti di capacità disegnati con HoloViews, salvabili in un file HTML che si apre senza server.
La prima cella mette nel notebook stesso il JavaScript di Panel e di Bokeh (`inline=True`): funziona
anche senza rete.

**EN** Every Lineare laboratory is a Panel component: the page's own view and knobs, in a cell. The
settings are the laboratory's parameters, by their Python names (`d_k=16`; the page link's keys, such as
`dk`, work too), `lang` picks the language (`"it"` or `"en"`)
and `level` the level (`"elementare"` or `"superiore"`). The player and the knobs work as in the app: the
computing runs in the kernel. At the end, the engine's records and the capacity experiments drawn with
HoloViews, which can be saved as an HTML file that opens with no server. The first cell puts Panel's and
Bokeh's JavaScript into the notebook itself (`inline=True`): it works with no network."""),

    ("code", r"""import holoviews as hv
import panel as pn

from lineare import labs

pn.extension(inline=True)           # Panel's and Bokeh's scripts in the notebook: no network needed
hv.extension("bokeh", inline=True)"""),

    ("md", r"""## La memoria si riempie · The state fills up

**IT** DeltaNet con `preset="overwrite"` (un numero cambia), in italiano: premi ▶ e guarda lo stato
riscritto a ogni token. `labs.parameters("state")` elenca le impostazioni.

**EN** DeltaNet with `preset="overwrite"` (a number changes), in Italian: press ▶ and watch the state
rewritten at every token. `labs.parameters("state")` lists the settings."""),
    ("code", r"""labs.state(variant="deltanet", preset="overwrite", lang="it")"""),
    ("md", r"""**IT** `export` salva ciò che un laboratorio mostra: una GIF per le slide (o `.mp4`, `.png`, `.csv`,
`.html`, una lezione in un file che si apre senza rete), con le manopole come sono ora.

**EN** `export` saves what a laboratory shows: a GIF for the slides (or `.mp4`, `.png`, `.csv`, `.html`, a
lesson in one file that opens with no network), with the knobs as they are now."""),
    ("code", r"""lab = labs.state(variant="deltanet", preset="overwrite", lang="it")
print(lab.export("deltanet.gif"))"""),

    ("md", r"""## Togli la softmax · Take away the softmax

**IT** La tabella di chi guarda chi, e come si ripiega in uno stato quando la softmax non c'è più.

**EN** The table of who looks at whom, and how it folds into a state once the softmax is gone."""),
    ("code", r"""labs.softmax(lang="en")"""),

    ("md", r"""## Due conti da pagare · Two bills

**IT** La cache KV cresce a ogni token generato, lo stato no. I tempi sono misurati su questa macchina.

**EN** The KV cache grows with every generated token, the state does not. The times are measured on this
machine."""),
    ("code", r"""labs.two_bills(tokens=32, lang="it")"""),

    ("md", r"""## La manopola della transizione · The transition knob

**IT** Dimenticare e correggere: da un modello della famiglia a un altro, girando due manopole.

**EN** Forget and correct: from one model of the family to another, by turning two knobs."""),
    ("code", r"""labs.transition(gate="scalar", alpha=0.9, beta=0.5, lang="en")"""),

    ("md", r"""## Dove la memoria cede · Where memory fails

**IT** L'errore di richiamo contro il numero di coppie memorizzate, con il limite teorico, al livello
"superiore" (con le formule).

**EN** The recall error against the number of stored pairs, with the theoretical bound, at the
"superiore" level (with the formulas)."""),
    ("code", r"""labs.memory_fails(rule="delta", d_k=16, level="superiore", lang="it")"""),

    ("md", r"""## Parallelo = ricorrente · Parallel = recurrent

**IT** Le tre forme dello stesso modello danno gli stessi numeri.

**EN** The three forms of one model give the same numbers."""),
    ("code", r"""labs.parallel_recurrent(variant="gla", lang="en")"""),

    ("md", r"""## Architetture · Architectures

**IT** RetNet, RWKV, xLSTM, Mamba-2, GLA e DeltaNet come impostazioni di un solo scheletro.

**EN** RetNet, RWKV, xLSTM, Mamba-2, GLA and DeltaNet as settings of one skeleton."""),
    ("code", r"""labs.architectures(arch="deltanet", lang="it")"""),

    ("md", r"""## I record del motore con HoloViews · The engine's records with HoloViews

**IT** `engine.stepping.run` passa i token uno alla volta e restituisce un record per token. Qui la
regola delta con gate su 12 token: lo stato $S_t$ di ogni testa come `hv.HoloMap` di immagini (il cursore
sceglie il token e la testa), poi i gate e l'errore che la regola delta corregge, token per token.

**EN** `engine.stepping.run` feeds the tokens one at a time and returns one record per token. Here the
gated delta rule on 12 tokens: every head's state $S_t$ as an `hv.HoloMap` of images (the slider picks
the token and the head), then the gates and the error the delta rule corrects, token by token."""),
    ("code", r"""import torch

from lineare.engine import capacity, stepping
from lineare import charts

torch.manual_seed(0)
T, H, d_k, d_v = 12, 2, 8, 8
q = torch.randn(1, T, H, d_k)
k = torch.nn.functional.normalize(torch.randn(1, T, H, d_k), dim=-1)   # unit keys, as the delta rule wants
v = torch.randn(1, T, H, d_v)
beta = torch.rand(1, T, H)                                             # step size of every write
g = torch.log(torch.full((1, T, H), 0.9))                              # keep 90% of the state per token
_o, _state, records = stepping.run("gated_deltanet", q, k, v, beta=beta, g=g)
states = charts.states(records)
states"""),
    ("code", r"""charts.gates(records) + charts.corrections(records)"""),

    ("md", r"""## Gli esperimenti di capacità · The capacity experiments

**IT** La stessa misura di `lineare capacity`: l'errore di richiamo contro $N$, poi la quota di risposte
giuste su $(d_k, N)$ e, per la regola delta con gate, su $(\alpha, \beta)$.

**EN** The same measurement as `lineare capacity`: the recall error against $N$, then the share of right
answers over $(d_k, N)$ and, for the gated delta rule, over $(\alpha, \beta)$."""),
    ("code", r"""charts.capacity_curve(capacity.capacity("delta", d_k=16, pairs=[4, 8, 12, 16, 24, 32, 48, 64]))"""),
    ("code", r"""(charts.capacity_map("delta", d_ks=[4, 8, 16, 32], pairs=[4, 8, 16, 32, 64])
 + charts.recall_map("gated-delta", d_k=16, pairs=24, alphas=[0.5, 0.7, 0.8, 0.9, 0.95, 1.0],
                     betas=[0.25, 0.5, 0.75, 1.0]))"""),

    ("md", r"""## Un file che si apre da solo · One file that opens on its own

**IT** `charts.save` scrive un file HTML con tutti i fotogrammi e il suo cursore: si apre nel browser
senza server e senza rete (da condividere o allegare agli appunti).

**EN** `charts.save` writes one HTML file with every frame and its slider: it opens in a browser with no
server and no network (to share, or to attach to lecture notes)."""),
    ("code", r"""path = charts.save(states, "state_over_tokens.html")
print(path)"""),
]


def build():
    return notebook_of(CELLS)


if __name__ == "__main__":
    nbformat.write(build(), TARGET)
    print(f"wrote {TARGET}")
