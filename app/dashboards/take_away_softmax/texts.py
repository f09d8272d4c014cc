"""The words of "Take away the softmax": the point, the token strip, one caption per word, the counts.

Texts are msgids (`N_`) translated when drawn; captions are plain Unicode (o₃, Σ) rather than
formulas, so that a run's eight captions cost no MathML conversion.
"""
import html
import math

from lineare.app.i18n import N_, _, format_number, ngettext

STRIP_CSS = """
:host { width: 100%; flex: 1 1 240px; min-width: 0; }   /* beside the switch, or under it on a phone */
.strip { display: flex; flex-wrap: wrap; gap: 6px 4px; font-size: calc(18px * var(--lineare-scale, 1)); }
.tok { border: 2px solid #bcccdc; border-radius: 8px; padding: 2px 7px; background: white; }
.tok sub { color: #52606d; font-size: 0.9em; margin-left: 2px; }
.tok.future { color: #52606d; border-color: #9fb3c8; border-style: dashed; background: #f5f7fa; }
.tok.current { border-color: #1d4f7a; background: #ffe8a3; box-shadow: 0 0 0 3px #f0b429; }
"""
CAPTION_CSS = """
:host { width: 100%; }
p { margin: 0; font-size: calc(16px * var(--lineare-scale, 1)); line-height: 1.5; color: #1f2933; }
.vec { font-family: "DejaVu Sans Mono", monospace; background: #f0f4f8; border-radius: 4px; padding: 0 4px;
       white-space: nowrap; }
.same { color: #1a7f37; font-weight: 700; }
"""

POINT = {
    ("softmax", "elementare"): N_(
        "**With the softmax**, each word asks a **question** (query) and answers it with one row of the "
        "table: a share for every word so far. To fill that row it needs the **label** (key) and the "
        "**information** (value) of every earlier word, kept in a **notebook of notes** (KV cache) that grows "
        "with the text. **Switch to φ**: the table gives way to a small **summary** (state)."),
    ("linear", "elementare"): N_(
        "**Without the softmax** the same answers come in another order: first every word adds its label and "
        "information to a **summary** (state) of 4 × 4 numbers, plus 4 for the running sum its answers are "
        "divided by, then each question reads the summary. Step "
        "through the words: the answer from the summary equals the answer from the table, and the summary "
        "never grows."),
    ("softmax", "superiore"): N_(
        "Softmax attention: $o_t = \\sum_{i \\le t} a_{ti} v_i$ with "
        "$a_{ti} = \\mathrm{softmax}_i(q_t^\\top k_i / \\sqrt{d})$. Written as a product of features, "
        "$\\exp(q^\\top k) = \\sum_n (q^\\top k)^n / n!$ needs infinitely many of them (its series), so no state "
        "of finite size can stand in for the past: row $t$ needs every $k_i, v_i$ (the KV cache, $O(t)$ "
        "memory) and the sequence needs the whole $T \\times T$ table, $O(T^2 d)$ work. Switch to $\\phi$."),
    ("linear", "superiore"): N_(
        "With $\\phi(q)^\\top \\phi(k)$ in place of $\\exp(q^\\top k)$, $\\phi = \\mathrm{elu} + 1$ "
        "(Katharopoulos et al. 2020), the product regroups, $(\\phi(Q)\\phi(K)^\\top \\odot M)\\,V \\to "
        "\\phi(Q)\\,(\\phi(K)^\\top V)$ as running sums: "
        "$o_t = S_t \\phi(q_t) / z_t^\\top \\phi(q_t)$, $S_t = S_{t-1} + v_t \\phi(k_t)^\\top \\in "
        "\\mathbb{R}^{d \\times d}$, $z_t = z_{t-1} + \\phi(k_t)$: constant memory, $O(T d^2)$ work."),
}

TABLE_HELP = {
    "elementare": N_("Row: the word that asks; column: the word it looks at; each row's shares add up to 100. "
                     "Grey, above the diagonal: later words, never looked at. With φ the table is never built: the "
                     "framed row comes from the summary."),
    "superiore": N_("$a_{ti}$ in percent, masked for $i > t$. With $\\phi$, $a_{ti}$ is "
                    "$\\phi(q_t)^\\top \\phi(k_i)$ over its row's sum: flatter rows than the softmax's, "
                    "as linear attention focuses less sharply."),
}
MEMORY_HELP = {
    ("softmax", "elementare"): N_("The notebook: one row per word read, its label (4 numbers, left) and its "
                                  "information (4 numbers, right). One more row for every word."),
    ("linear", "elementare"): N_("The summary: each word adds its information spread along its label. The last "
                                 "row adds up the labels, so that the answer can be turned into shares. 20 "
                                 "numbers, after 8 words or after 8000."),
    ("softmax", "superiore"): N_("KV cache: $k_i, v_i \\in \\mathbb{R}^{4}$ for every $i \\le t$, $2dt$ numbers."),
    ("linear", "superiore"): N_("$S_t = \\sum_{i \\le t} v_i \\phi(k_i)^\\top$ (rows: value dimension, columns: "
                                "key dimension) and $z_t = \\sum_{i \\le t} \\phi(k_i)$ (last row): $d^2 + d$ "
                                "numbers for every $t$."),
}
COST_HELP = {
    "elementare": N_("Multiplications for a whole text of T words, with d numbers per label (64 or 128 in real "
                     "models); both axes logarithmic. The table grows with the square of the length (twice the "
                     "words, four times the work), the summary with the length. Shorter than d, the table is "
                     "cheaper."),
    "superiore": N_("Multiply-adds of one head over $T$ tokens: $(QK^\\top)V$ costs $T^2 d + T^2 d$, "
                    "$Q(K^\\top V)$ costs $T d^2 + T d^2$ (mask and normalizer left out). They cross at "
                    "$T = d$."),
}
TRADE_OFF = {
    "elementare": N_("**The trade-off:** the table order (parallel) is for training, when the whole text is known "
                     "and a graphics card multiplies big tables at once; the summary order (recurrent) is for "
                     "generating, one word at a time with a memory that never grows."),
    "superiore": N_("**Trade-off:** the parallel form $(QK^\\top)V$ is for training (all $T$ tokens known, large "
                    "matrix products); the recurrent form $Q(K^\\top V)$ is for generating (one token at a time, "
                    "$O(d^2)$ memory). The chunked form mixes the two (page Parallel = recurrent)."),
}

SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def token_strip(words):
    """One box per word, numbered; the player lights the current one (FrameText's data-step)."""
    boxes = "".join(f'<span class="tok" data-step="{i}">{html.escape(word)}<sub>{i + 1}</sub></span>'
                    for i, word in enumerate(words))
    return f'<div class="strip">{boxes}</div>'


def vector(values):
    """(0.091 −0.432 …) in the page's number format."""
    numbers = " ".join(format_number(float(x), 3).replace("-", "−") for x in values)
    return f'<span class="vec">({html.escape(numbers)})</span>'


def scientific(x):
    """2.2 · 10⁻¹⁶, or 0."""
    if x == 0 or not math.isfinite(x):
        return "0"
    exponent = math.floor(math.log10(abs(x)))
    power = str(exponent).replace("-", "⁻").translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))
    return f"{format_number(x / 10 ** exponent, 1)} · 10{power}"


def captions(run, words, superiore):
    """One caption per word t: o_t from the table, and from the state (linear) or the notebook (softmax)."""
    texts = []
    for t, word in enumerate(words):
        n = str(t + 1)
        fields = {"n": n, "word": html.escape(word), "table": vector(run.outputs[t]), "sub": n.translate(SUBSCRIPTS)}
        if run.kind == "linear":
            fields.update(state=vector(run.recurrent[t]), gap=scientific(run.gap(t)))
            text = _("t = {n} (“{word}”): row {n} of the table times V gives o{sub} = {table}; "
                     "S{sub} φ(q{sub}) / z{sub}ᵀφ(q{sub}) gives {state}. Largest difference: {gap} (float64).") \
                if superiore else \
                _("Word {n}, “{word}”: the answer from row {n} of the table is {table}, the answer from the "
                  "summary is {state}. <span class=\"same\">The same numbers</span>: they differ by {gap}, "
                  "rounding.")
        else:
            fields.update(cells=str(2 * run.q.shape[1] * (t + 1)))
            text = _("t = {n} (“{word}”): o{sub} = Σ a{sub}ᵢ vᵢ over i ≤ {n} = {table}. The KV cache holds "
                     "{n} × 2d = {cells} numbers and grows by 2d per token.") \
                if superiore else \
                ngettext("Word {n}, “{word}”: its answer is row {n} of the table times the information of word 1: "
                         "{table}. Rows in the notebook: {n}, one more for every new word.",
                         "Word {n}, “{word}”: its answer is row {n} of the table times the information of words 1 "
                         "to {n}: {table}. Rows in the notebook: {n}, one more for every new word.", t + 1)
        texts.append(f"<p>{text.format(**fields)}</p>")
    return texts


def counts_text(T, d, counts, superiore):
    """The two counts at length T, and how many times one is the other."""
    parallel, recurrent = counts["parallel"], counts["recurrent"]
    fields = {"T": format_number(T), "d": d, "parallel": format_number(parallel),
              "recurrent": format_number(recurrent)}
    if parallel == recurrent:
        ratio = _("the same work (T = d)")
    elif parallel > recurrent:
        ratio = _("{times} times fewer with the summary").format(times=format_number(parallel // recurrent))
    else:
        ratio = _("{times} times more with the summary: the text is shorter than d").format(
            times=format_number(recurrent // parallel))
    fields["ratio"] = ratio
    if superiore:
        return _("**T = {T}, d = {d}:** $(QK^\\top)V$ {parallel} multiply-adds, $Q(K^\\top V)$ {recurrent}: "
                 "{ratio}.").format(**fields)
    return _("**{T} words, d = {d}:** table {parallel} multiplications, summary {recurrent}: {ratio}.").format(
        **fields)
