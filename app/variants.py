"""What the app knows about each variant, in one record per variant: every page reads it from here.

    from lineare.app.variants import REGISTRY, variant
    variant("gla").label        # msgid: translate with _() where it is drawn
    [v.name for v in REGISTRY.values() if v.corrects]

A record holds words (msgids, marked with N_ and translated where they are drawn), formulas in the
papers' notation (S ∈ R^{d_v×d_k}, o_t = S_t q_t), its place on the transition knob and its default
knob values. What the engine knows (which gate keywords a variant takes) is read from the engine, not
repeated: `forgets`, `corrects` and `per_channel` come from `engine.ops.GATES`.

Adding a variant: its step function and chunk parameters in `engine/ops/`, one record here, and the
translations of its words (app/README.md, "Adding a variant"). `check_registry()` runs at import and
names what is missing on either side.
"""
from dataclasses import dataclass

from lineare.app.i18n import N_
from lineare.engine.ops import GATES, VARIANTS as ENGINE_VARIANTS

FAMILIES = {
    "accumulate": N_("starting point: only adds"),
    "fade": N_("fades the past"),
    "correct": N_("corrects what is stored"),
    "baseline": N_("the baseline: no fixed summary"),
}
KNOB_GATES = ("none", "fixed", "scalar", "channel")     # the transition knob's gate granularity


@dataclass(frozen=True)
class Variant:
    name: str                   # the engine's name (engine.ops.VARIANTS)
    label: str                  # msgid: display name
    short: str                  # msgid: shorter display name, for grids and legends
    family: str                 # a key of FAMILIES
    papers: str                 # author-year references (not translated)
    rule: str                   # msgid: what it does to its memory, in plain words (Elementare)
    formula: str                # display formula of its update and read-out (Superiore)
    table: tuple                # msgids: (transition, write, read-out, gates) in plain words
    table_formula: tuple        # the same four cells with formulas (msgids where they hold words)
    special: str | None         # msgid: what sets it apart, plain words (None: the baseline)
    special_formula: str | None  # msgid: the same with formulas
    mask_note: str | None       # msgid: what its parallel form's decay mask looks like
    knob: tuple | None          # (gate, β): its exact place on the transition knob; None: off the knob
    nearest: tuple | None       # (gate, β): the nearest knob setting when off the knob
    off_knob: str | None        # msgid: why it is off the knob ({gate}, {beta} filled in)
    alpha: float                # default forget knob α (1 keeps everything)
    left_out: str               # msgid: what our tiny version leaves out of the paper's layer
    beta: float = 1.0           # default correct knob β
    knob_note: str | None = None  # msgid: what the knob leaves out of the model even where it is on it
    common_noun: bool = False   # its name is a common noun ("linear attention"): lower-case mid-sentence

    @property
    def forgets(self):
        """Its transition fades the past (a log decay g, or mLSTM's forget gate f)."""
        return "g" in GATES[self.name] or "f" in GATES[self.name]

    @property
    def corrects(self):
        """It corrects what is stored (delta rule: a β, or RWKV-7's low-rank a bᵀ)."""
        return "beta" in GATES[self.name] or "a" in GATES[self.name]

    @property
    def per_channel(self):
        """Its decay is one number per key channel."""
        return GATES[self.name].get("g") == "BTHK"

    @property
    def fixed_state(self):
        return self.family != "baseline"


RECORDS = (
    Variant(
        'linear', N_('Linear attention'), short=N_('Linear attention'), family='accumulate',
        papers='Katharopoulos et al. 2020',
        rule=N_('Linear attention only adds: every pair is piled on top of the others and nothing is ever '
               'erased.'),
        formula=r"$$S_t = S_{t-1} + v_t k_t^\top,\qquad o_t = S_t q_t$$",
        table=(N_('keeps everything'),
               N_('adds the new pair'),
               N_('asks the summary the question'),
               N_('none')),
        table_formula=('$I$',
                       N_(r"$v_t k_t^\top$ with $k = \phi(k)$"),
                       N_(r"$S_t \phi(q_t)$, optionally divided by $z_t^\top \phi(q_t)$, $z_t = z_{t-1} + "
                          r"\phi(k_t)$"),
                       N_(r"feature map $\phi$: elu+1 (original), identity, relu…")),
        special=N_('The starting point: it only adds. Nothing ever fades or is removed, so the pairs blur into '
               'each other: with random labels a little from the second pair on, and more with every pair; only '
               'perpendicular labels stay apart, and there are only as many of those as the summary has columns.'),
        special_formula=N_(r"With $A_t = I$ the state is a plain running sum, "
               r"$S_t = \sum_{i \le t} v_i \phi(k_i)^\top$; the original also divides the read-out "
               r"$S_t \phi(q_t)$ by $z_t^\top \phi(q_t)$, with $z_t = \sum_{i \le t} \phi(k_i)$."),
        mask_note=N_('Linear attention forgets nothing: every earlier token counts fully, so the mask is just “the'
               ' past yes, the future no”.'),
        knob=('none', 0.0), nearest=None, off_knob=None,
        alpha=1.0, common_noun=True,
        left_out=N_("Our small version uses the original's feature map (elu + 1) but does not divide the answer by "
                    "the running sum of the keys (the engine can: normalize=True).")),
    Variant(
        'retnet', 'RetNet', short='RetNet', family='fade', papers='Sun et al. 2023',
        rule=N_('RetNet fades the whole summary a little at every step, at a fixed rate, then adds the new '
               'pair.'),
        formula=r"$$S_t = \gamma\, S_{t-1} + v_t k_t^\top,\qquad o_t = S_t q_t$$",
        table=(N_('fades everything at a fixed rate'),
               N_('adds the new pair'),
               N_('asks the summary the question'),
               N_('a fixed rate per head, the same for every input')),
        table_formula=(N_(r"$\gamma_h I$, fixed per head"),
                       r"$v_t k_t^\top$",
                       '$S_t q_t$',
                       r"$\gamma_h = 1 - 2^{-5-h}$"),
        special=N_('The fading rate is fixed in advance, one per head, and never depends on the text: some heads'
               ' forget quickly, others slowly.'),
        special_formula=N_(r"$\gamma_h = 1 - 2^{-5-h}$ is fixed per head $h$, not computed from the token; the picture "
               r"shows head 0, $\gamma = 1 - 2^{-5} \approx 0.97$. The parallel form uses the decay mask "
               r"$D_{ts} = \gamma^{t-s}$."),
        mask_note=N_('RetNet fades every step by the same fixed factor γ: the mask darkens evenly away from the '
               'diagonal, γ to the power of the distance.'),
        knob=('fixed', 0.0), nearest=None, off_knob=None,
        alpha=0.97,
        left_out=N_("Our small version leaves out RetNet's rotating positions (xPos) and its output gate, and "
                    "normalizes each head's answer with an RMS norm where RetNet has its group norm (every layer "
                    "here has that RMS norm).")),
    Variant(
        'mamba2', 'Mamba-2', short='Mamba-2', family='fade', papers='Dao & Gu 2024',
        rule=N_('Mamba-2 fades the whole summary at every step, by an amount its gate chooses, then adds the '
               'new pair.'),
        formula=r"$$S_t = \alpha_t\, S_{t-1} + v_t k_t^\top,\qquad o_t = S_t q_t$$",
        table=(N_('fades everything, by an amount the word chooses'),
               N_('adds the new pair, scaled by the same choice'),
               N_('asks the summary the question, plus a shortcut from the input'),
               N_('computed from each word')),
        table_formula=(r"$\alpha_t I,\ \alpha_t = \exp(\Delta_t A_h)$",
                       N_(r"$v_t k_t^\top$ with $k \leftrightarrow B_t$, $q \leftrightarrow C_t$, $v \leftrightarrow "
                          r"\Delta_t x_t$"),
                       '$S_t q_t + D x_t$',
                       r"$A = -\exp(A_{\log})$, $\Delta = \mathrm{softplus}(\cdot + b_\Delta)$"),
        special=N_('Each word chooses how much to forget, one amount for the whole summary. The answer also gets'
               ' a shortcut: a copy of the input added straight to the output.'),
        special_formula=N_(r"$\alpha_t = \exp(\Delta_t A_h)$ with a step $\Delta_t$ computed from the token; the write "
               r"uses $B_t$ as key, $C_t$ as query and $\Delta_t x_t$ as value, and the read-out adds the "
               r"skip $D x_t$. Here $\alpha_t = 0.8$."),
        mask_note=N_('Mamba-2 fades by a factor α that its gate chooses anew at every token (here every token gets'
               ' the value of the knob).'),
        knob=('scalar', 0.0), nearest=None, off_knob=None,
        alpha=0.9,
        left_out=N_("Our small version leaves out Mamba-2's output gate (the z branch) and keeps its "
                    "one-number-per-head forgetting."),
        knob_note=N_("The knob has Mamba-2's transition and write, not its shortcut: the copy of the input "
                     "(D x_t) that Mamba-2 adds to its answer is left out.")),
    Variant(
        'gla', 'GLA', short='GLA', family='fade', papers='Yang et al. 2024',
        rule=N_('GLA fades each column of the summary at its own speed, then adds the new pair.'),
        formula=r"$$S_t = S_{t-1}\,\mathrm{diag}(\alpha_t) + v_t k_t^\top,\qquad o_t = S_t q_t$$",
        table=(N_('fades each column at its own speed, chosen by the word'),
               N_('adds the new pair'),
               N_('asks the summary the question'),
               N_('computed from each word, one per column')),
        table_formula=(r"$\mathrm{diag}(\alpha_t),\ \alpha_t \in (0,1)^{d_k}$",
                       r"$v_t k_t^\top$",
                       '$S_t q_t$',
                       N_(r"$\log \alpha_t = \mathrm{logsigmoid}(\cdot)/16$, low-rank projection")),
        special=N_('Each column of the summary fades at its own speed, chosen by the word: some columns keep a '
               'long memory, others a short one.'),
        special_formula=N_(r"$\alpha_t \in (0,1)^{d_k}$ from a low-rank projection of the token. Here $\alpha_{t,i} = "
               '0.7^{s_i}$ with $s_i$ from 0.25 to 1.75, as on the knob.'),
        mask_note=N_('GLA fades each key channel at its own speed: the slider picks which channel is shown.'),
        knob=('channel', 0.0), nearest=None, off_knob=None,
        alpha=0.9,
        left_out=N_("Our small version leaves out GLA's output gate; the forgetting of every column is learned, "
                    "as in the paper.")),
    Variant(
        'deltanet', 'DeltaNet', short='DeltaNet', family='correct', papers='Schlag et al. 2021; Yang et al. 2024',
        rule=N_('DeltaNet corrects: before writing a pair it removes what the summary already held under that '
               'label, so new information replaces the old.'),
        formula=r"$$S_t = S_{t-1}\,(I - \beta_t k_t k_t^\top) + \beta_t v_t k_t^\top,\qquad o_t = S_t q_t$$",
        table=(N_('erases what the summary holds under the label'),
               N_('adds the new pair, times β'),
               N_('asks the summary the question'),
               N_('β computed from each word')),
        table_formula=(r"$I - \beta_t k_t k_t^\top$",
                       r"$\beta_t v_t k_t^\top$",
                       '$S_t q_t$',
                       N_(r"$\beta_t = \sigma(\cdot)$ ($2\sigma$ allows negative eigenvalues, Grazzi et al. 2025); "
                          r"$q, k$ L2-normalized")),
        special=N_('Before writing, it asks the summary what it already holds under this label and writes only '
               'the difference: new information replaces the old instead of mixing with it.'),
        special_formula=N_(r"$S_t = S_{t-1} + \beta_t (v_t - S_{t-1} k_t)\, k_t^\top$: one gradient step of size "
               r"$\beta_t$ on $\tfrac12 \lVert S k_t - v_t \rVert^2$. With $\beta_t = 1$ (here) the "
               'transition removes the direction $k_t$.'),
        mask_note=N_('DeltaNet fades nothing, so its mask is “the past yes, the future no”. Its correction needs '
               'one more step inside each chunk (a triangular system), not drawn here.'),
        knob=('none', 1.0), nearest=None, off_knob=None,
        alpha=1.0,
        left_out=N_('Our small version keeps β between 0 and 1, as the DeltaNet papers do (Grazzi et al. 2025 '
                    'let it go up to 2), and leaves out the output gate.')),
    Variant(
        'gated_deltanet', 'Gated DeltaNet', short='Gated DeltaNet', family='correct',
        papers='Yang, Kautz & Hatamizadeh 2025',
        rule=N_('Gated DeltaNet corrects like DeltaNet and also fades the whole summary a little at every '
               'step.'),
        formula=r"$$S_t = \alpha_t\, S_{t-1}\,(I - \beta_t k_t k_t^\top) + \beta_t v_t k_t^\top,\qquad o_t = "
                'S_t q_t$$',
        table=(N_('fades everything, then erases what the summary holds under the label'),
               N_('adds the new pair, times β'),
               N_('asks the summary the question'),
               N_('fading and β computed from each word')),
        table_formula=(r"$\alpha_t (I - \beta_t k_t k_t^\top)$",
                       r"$\beta_t v_t k_t^\top$",
                       '$S_t q_t$',
                       r"$\log \alpha_t = -\exp(A_{\log})\,\mathrm{softplus}(\cdot + b_\Delta)$"),
        special=N_("DeltaNet's correction plus Mamba-2's fading: it can replace a single piece of information "
               'and also clear out the whole summary when the text moves on.'),
        special_formula=N_(r"The gradient step of DeltaNet with weight decay $\alpha_t$, the online-regression view of "
               r"the family. Here $\alpha_t = 0.8$, $\beta_t = 1$."),
        mask_note=N_('Gated DeltaNet fades by a factor α chosen at every token; its correction needs one more step'
               ' inside each chunk (a triangular system), not drawn here.'),
        knob=('scalar', 1.0), nearest=None, off_knob=None,
        alpha=0.95,
        left_out=N_('Our small version leaves out the output gate of Gated DeltaNet. (Only the paper\'s hybrid '
                    'models, Gated DeltaNet-H1 and -H2, also mix in sliding-window attention.)')),
    Variant(
        'rwkv6', 'RWKV-6', short='RWKV-6', family='fade', papers='Peng et al. 2024',
        rule=N_('RWKV-6 fades each column at its own speed; it reads the summary before adding the current '
               'pair, with a bonus for that pair.'),
        formula=r"$$S_t = S_{t-1}\,\mathrm{diag}(w_t) + v_t k_t^\top,\qquad o_t = (S_{t-1} + v_t (u \odot "
                r"k_t)^\top)\, q_t$$",
        table=(N_('fades each column at its own speed, chosen by the word'),
               N_('adds the new pair'),
               N_('reads before adding, with a bonus for the current pair'),
               N_('computed from each word, one per column')),
        table_formula=(r"$\mathrm{diag}(w_t)$",
                       r"$v_t k_t^\top$",
                       N_(r"$(S_{t-1} + v_t (u \odot k_t)^\top)\, q_t$: reads before the update, bonus $u$"),
                       r"$\log w_t = -\exp(\cdot)$"),
        special=N_('It fades like GLA, but it answers before writing the current pair, and then adds that pair '
               'to the answer with a bonus weight of its own.'),
        special_formula=N_(r"$o_t = (S_{t-1} + v_t (u \odot k_t)^\top)\, q_t$: the read-out uses $S_{t-1}$, and the "
               r"current token enters only through the bonus $u \in \mathbb{R}^{d_k}$. Here $w_{t,i} = "
               '0.7^{s_i}$.'),
        mask_note=N_('RWKV-6 fades each key channel at its own speed and reads the memory before writing: its mask'
               ' is shifted one step down, and the diagonal holds the bonus u of the current token.'),
        knob=None, nearest=('channel', 0.0),
        off_knob=N_("Not exactly on the knob: its transition is GLA's (gate “{gate}”, β = {beta}), but the knob "
               'reads after writing and has no bonus u. The link opens that nearest setting.'),
        alpha=0.9,
        left_out=N_("Our small version replaces RWKV's token shift with a short convolution and leaves out its "
                    "channel-mixing block.")),
    Variant(
        'rwkv7', 'RWKV-7', short='RWKV-7', family='correct', papers='Peng et al. 2025',
        rule=N_('RWKV-7 fades each column at its own speed and corrects what is stored under the current '
               'label, like DeltaNet.'),
        formula=r"$$S_t = S_{t-1}\,(\mathrm{diag}(w_t) - \hat\kappa_t (a_t \odot \hat\kappa_t)^\top) "
                r"+ v_t \tilde k_t^\top,\qquad o_t = S_t q_t$$",
        table=(N_('fades each column and erases part of what the summary holds under the label'),
               N_('adds the new pair'),
               N_('asks the summary the question'),
               N_('fading and erasing strength computed from each word')),
        table_formula=(N_(r"$\mathrm{diag}(w_t) - \hat\kappa_t (a_t \odot \hat\kappa_t)^\top$ (generalized delta "
                          r"rule)"),
                       N_(r"$v_t \tilde k_t^\top$, with $\tilde k_t = k_t \odot (1 + (a_t - 1) \odot k_a)$"),
                       '$S_t q_t$',
                       N_(r"removal key $\hat\kappa_t = k_t \odot \xi / \lVert k_t \odot \xi \rVert$ (here $\xi = 1$), "
                          r"in-context learning rate "
                          r"$a_t = \sigma(\cdot) \in (0,1)^{d_k}$, $\log w_t = -e^{-1/2} \sigma(\cdot)$")),
        special=N_("Fading per column like RWKV-6, plus a correction like DeltaNet's, with its own erasing "
               'strength for each column.'),
        special_formula=N_(r"Diagonal plus rank one, the general form of the delta rule: the removal key "
               r"$\hat\kappa_t$ says what to erase and the in-context learning rate $a_t$ how much, channel by "
               r"channel; the write uses the key $\tilde k_t$. In fla's (and the engine's) terms the transition is "
               r"$\mathrm{diag}(w_t) + a b^\top$ with $a = -\hat\kappa_t$, $b = \hat\kappa_t \odot a_t$. Here "
               r"$w_{t,i} = 0.7^{s_i}$, $a_t = 1$ and $\hat\kappa_t = \tilde k_t = k_t$."),
        mask_note=N_('RWKV-7 fades each key channel at its own speed; its correction needs one more step inside '
               'each chunk (a triangular system), not drawn here.'),
        knob=None, nearest=('channel', 1.0),
        off_knob=N_("Not exactly on the knob: the nearest setting is gate “{gate}”, β = {beta}, where the knob "
                    "fades the summary and then erases from what is left. RWKV-7 erases what the summary held "
                    "before the fading, and the erased part is not faded; it has its own removal key and its own "
                    "strength for each column, and writes with a key of its own. The link opens that nearest setting."),
        alpha=0.95,
        left_out=N_("Our small version replaces RWKV's token shift with a short convolution, leaves out the "
                    "value residual, the bonus term of the current token and the channel-mixing block, and "
                    "normalizes each head's answer with an RMS norm where RWKV-7 has its group norm. Its removal "
                    "key is RWKV-7's, k ⊙ ξ normalized with a learned ξ; only the mechanism mode and the knob "
                    "take ξ = 1.")),
    Variant(
        'mlstm', 'mLSTM (xLSTM)', short='mLSTM', family='fade', papers='Beck et al. 2024',
        rule=N_('mLSTM (xLSTM) has a forget gate and an input gate, and divides its answer by how much has '
               'been written under that label.'),
        formula=r"$$C_t = f_t\, C_{t-1} + i_t\, v_t k_t^\top,\quad n_t = f_t\, n_{t-1} + i_t\, k_t,\quad o_t ="
                r" \frac{C_t q_t}{\max(|n_t^\top q_t|, 1)}$$",
        table=(N_('fades everything, by a forget gate'),
               N_('adds the new pair, times an input gate'),
               N_('asks the summary the question and divides by how much was written under that label'),
               N_('forget and input gates computed from each word')),
        table_formula=('$f_t I$',
                       N_(r"$i_t v_t k_t^\top$, normalizer $n_t = f_t n_{t-1} + i_t k_t$"),
                       N_(r"$C_t q_t / \max(|n_t^\top q_t|, 1)$, stabilized with $m_t$"),
                       N_(r"$i = \exp(\tilde\imath)$, $f$ = sigmoid or exp")),
        special=N_('Besides the forget gate it has an input gate that says how strongly to write, and it divides'
               ' the answer by a running total of what was written, so answers do not grow with the number '
               'of writes.'),
        special_formula=N_(r"The input gate $i_t = \exp(\tilde\imath_t)$ can exceed 1, so the state is stored "
               'divided by $e^{m_t}$, a running maximum; the normalizer $n_t = f_t n_{t-1} + i_t k_t$ divides the '
               r"read-out. Here $f_t = 0.9$ and $\tilde\imath_t = 0$, so $i_t = e^0 = 1$."),
        mask_note=N_('mLSTM fades by its forget gate (its input gate lets every pair in whole here, i = 1, so it '
               'changes nothing; the engine also rescales to keep the numbers in range). The mask is not the '
               'whole answer: mLSTM then divides it by its normalizer.'),
        knob=None, nearest=('scalar', 0.0),
        off_knob=N_("Not exactly on the knob: its forget gate is one number per token, like Mamba-2's (gate "
               '“{gate}”, β = {beta}), but the knob has no input gate and no normalizer. The link opens that'
               ' nearest setting.'),
        alpha=0.95,
        left_out=N_("Our small version leaves out xLSTM's output gate and its learnable skip; the forget gate is "
                    "a sigmoid.")),
    Variant(
        'softmax', N_('Softmax attention (baseline)'), short=N_('Softmax attention'), family='baseline',
        papers='Vaswani et al. 2017',
        rule=N_('Softmax attention keeps no fixed summary: it writes every word in its notebook of notes and '
               'compares the question with every label there.'),
        formula=r"$$o_t = \sum_{i \le t} \frac{\exp(q_t^\top k_i / \sqrt{d_k})}{\sum_{j \le t} \exp(q_t^\top k_j "
                r"/ \sqrt{d_k})}\, v_i$$",
        table=(N_('no fixed summary'),
               N_('writes every word in its notebook, which keeps growing'),
               N_('compares the question with every label in the notebook'),
               N_('none')),
        table_formula=('—',
                       N_('append $k_t, v_t$ to the KV cache'),
                       r"$\sum_{i \le t} \mathrm{softmax}_i(q_t^\top k_i / \sqrt{d_k})\, v_i$",
                       '—'),
        special=None,
        special_formula=None,
        mask_note=None,
        knob=None, nearest=None, off_knob=None,
        alpha=1.0, common_noun=True,
        left_out=N_('Our small version adds no position information to the tokens: only the short convolution '
                    'before it tells one position from another.')),
)

REGISTRY = {record.name: record for record in RECORDS}
ORDER = tuple(sorted((name for name, record in REGISTRY.items() if record.fixed_state),
                     key=lambda name: list(FAMILIES).index(REGISTRY[name].family)))
"""Teaching order of the fixed-state models: accumulate, fade the past, correct what is written (the
engine's order within a family)."""


def check_registry(registry=None, engine_variants=ENGINE_VARIANTS):
    """Raise a clear error when the registry and the engine disagree about which variants exist."""
    registry = REGISTRY if registry is None else registry
    no_record = [name for name in engine_variants if name not in registry]
    no_engine = [name for name in registry if name not in engine_variants]
    problems = []
    if no_record:
        problems.append(f"engine variants without a registry record in app/variants.py: {', '.join(no_record)}")
    if no_engine:
        problems.append(f"registry records without engine support in engine.ops.VARIANTS: {', '.join(no_engine)}")
    for name, record in registry.items():
        if record.family not in FAMILIES:
            problems.append(f"{name}: unknown family {record.family!r}")
        for place in (record.knob, record.nearest):
            if place is not None and place[0] not in KNOB_GATES:
                problems.append(f"{name}: unknown knob gate {place[0]!r}")
        if record.fixed_state and (record.knob is None) == (record.nearest is None):
            problems.append(f"{name}: give exactly one of knob (on the knob) or nearest (off it)")
        if record.fixed_state:
            missing = [field for field in ("special", "special_formula", "mask_note") if not getattr(record, field)]
            if record.knob is None and not record.off_knob:
                missing.append("off_knob")
            if missing:
                problems.append(f"{name}: a fixed-state model needs {', '.join(missing)} (its architecture card "
                                "and its mask note)")
    if problems:
        raise LookupError("; ".join(problems))


def variant(name):
    """The record of `name`; a clear error for a name the registry does not know."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise LookupError(f"unknown variant {name!r}; the registry knows {', '.join(REGISTRY)}") from None


def label(name):
    """The display name of `name` in the current language."""
    from lineare.app.i18n import _
    return _(variant(name).label)


def running_name(name):
    """The name of `name` as written inside a sentence, in the current language: "linear attention" and
    "attenzione lineare" lower-case (a common noun), every other name as it is spelt (RetNet, mLSTM)."""
    from lineare.app.i18n import _
    record = variant(name)
    text = _(record.short)
    return text[:1].lower() + text[1:] if record.common_noun else text


check_registry()


# Words of the transition knob and of the unified table (msgids), shared by the knob page (the whole
# table) and the architectures page (one card per row).
GATE_NAMES = {"none": N_("None: keeps everything"), "fixed": N_("Fixed: the same at every token"),
              "scalar": N_("Scalar: one per token"), "channel": N_("Per channel: one per column")}
COLUMNS_PLAIN = (N_("model"), N_("what happens to the old summary"), N_("what is written"),
                 N_("how it answers"), N_("who sets the gates"))      # the name, then the four cells of `table`
COLUMNS_FORMULA = (N_("model"), N_(r"transition (right-multiplies $S_{t-1}$)"), N_("write"),
                   N_("read-out"), N_("gate parametrization in a layer"))   # … of `table_formula`
