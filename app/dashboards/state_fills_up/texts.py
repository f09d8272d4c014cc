"""What "The state fills up" writes: the token strips, the answers, the notices, the checkpoint's card.

Every function returns text (HTML escaped here, or Markdown with formulas for `Explanation`) for one
run, or one run at one token; the numbers it words come from the model (`mechanism.Run`,
`model.TrainedRun`). The token strips are drawn once per run: the browser's player marks the current
token (`data-step`), and an answer shows once its token is reached.
"""
import html

from lineare.app import mechanism
from lineare.app.checkpoints import path_of
from lineare.app.dashboards.state_fills_up.model import TRAINED_LENGTH, token_label
from lineare.app.i18n import N_, _, format_number
from lineare.app.variants import REGISTRY, running_name

LONG_STRIP = 12
STRIP_CSS = """
:host { width: 100%; }
.strip { display: flex; flex-wrap: wrap; gap: 6px; font-size: calc(18px * var(--lineare-scale, 1)); }
.tok { border: 2px solid #bcccdc; border-radius: 8px; padding: 3px 8px 1px 8px; min-width: 34px;
       text-align: center; background: white; font-family: "DejaVu Sans Mono", monospace; }
.tok .answer { display: block; font-size: calc(16px * var(--lineare-scale, 1)); font-family: sans-serif;
               line-height: 1.1; min-height: 18px; color: #52606d; }    /* 16 px, in the height 13 px took */
.tok.ask { border-style: dashed; }
.tok.future { color: #52606d; border-color: #9fb3c8; border-style: dashed; background: #f5f7fa; }
.tok.future .answer > span { visibility: hidden; }
.tok.current { border-color: #1d4f7a; background: #ffe8a3; box-shadow: 0 0 0 3px #f0b429; }
.ok { color: #1a7f37; font-weight: 700; }
.bad { color: #b42318; font-weight: 700; }
.strip.long { gap: 4px; font-size: calc(16px * var(--lineare-scale, 1)); }
.strip.long .tok { padding: 2px 4px 1px 4px; min-width: 24px; border-radius: 6px; }
.strip.long .tok .answer { font-size: calc(16px * var(--lineare-scale, 1)); min-height: 20px; }
.strip.compact { gap: 4px; font-size: calc(16px * var(--lineare-scale, 1)); }
.strip.compact .tok { padding: 3px 4px 1px 4px; min-width: 30px; }
.strip.compact .tok.ask { border-color: #1d4f7a; }
.strip.compact .tok.value:not(.current) { background: #eef4fb; }
.strip.compact .tok.filler { color: #616e7c; }
"""
GAUGE_CSS = """
.gauge { display: inline-flex; gap: 2px; vertical-align: middle; margin-left: 12px; }
.gauge .col { display: inline-block; width: 10px; height: 16px; border: 1px solid #7b8794; border-radius: 2px; }
.gauge .col.used { background: #1d4f7a; border-color: #1d4f7a; }
.gauge .col.shared { background: repeating-linear-gradient(45deg, #b42318 0 3px, #ffffff 3px 5px);
                     border-color: #b42318; }     /* striped: shared columns are told apart without colour */
"""
CAPTION_CSS = """
:host { font-size: calc(18px * var(--lineare-scale, 1)); }
p { margin: 2px 0; }
"""
ANSWER_CSS = """
:host { font-size: calc(18px * var(--lineare-scale, 1)); }
.big { font-size: calc(26px * var(--lineare-scale, 1)); font-weight: 700; }
.ok { color: #1a7f37; } .bad { color: #b42318; } .muted { color: #616e7c; }
"""


def problem_messages(problems):
    """The notices for the typed text's problems (codes from `mechanism.parse`)."""
    messages = []
    for code, detail in problems:
        if code == "empty":
            messages.append(_("The typed sequence has no tokens: the phone book is shown instead."))
        elif code == "unknown":
            shown = detail if len(detail) <= 80 else detail[:80] + "…"
            messages.append(_("These pieces are not tokens and were left out: {pieces}. Write name:number "
                              "to store, name? to ask, · to wait.").format(pieces=shown))
        elif code == "too_long":
            messages.append(_("The typed text is longer than {limit} characters: the rest was left out.")
                            .format(limit=detail))
        elif code == "too_many":
            messages.append(_("Only the first {limit} tokens are used.").format(limit=detail))
    return messages


def said(answer):
    """What the memory answered, in words: a value, «tie: 21 / 99» (no answer: counted as wrong), or —."""
    if answer.tied:
        return _("tie: {values}").format(values=" / ".join(answer.tied))
    return answer.value or "—"


def token_strip(result):
    """Mechanism mode: one box per token, the memory's answer under each question."""
    boxes = []
    for i, (token, answer) in enumerate(zip(result.tokens, result.answers)):
        classes = ["tok", token.kind]
        below = ""
        if token.kind == "ask":
            if answer.expected is None:
                below = '<span class="bad">%s</span>' % html.escape(_("never stored"))
            elif answer.right:
                below = f'<span class="ok">{html.escape(answer.value)} ✓</span>'
            else:
                below = f'<span class="bad">{html.escape(said(answer))} ✗</span>'
        boxes.append(f'<div class="{" ".join(classes)}" data-step="{i}">{html.escape(token.text)}'
                     f'<span class="answer">{below}</span></div>')
    long = " long" if len(boxes) > LONG_STRIP else ""        # a long sequence stays in two rows or three
    return f'<div class="strip{long}">{"".join(boxes)}</div>'


def memory_line(result, t):
    record = result.records[t]
    if not REGISTRY[result.variant].fixed_state:
        text = _("Memory used: KV cache {bytes} bytes after {t} tokens, and growing with every token.").format(
            bytes=format_number(record.kv_cache_bytes), t=t + 1)
    else:
        text = _("Memory used: state {bytes} bytes, the same at every step.").format(
            bytes=format_number(record.state_bytes))
    line = f"<span>{html.escape(text)}</span>"
    if result.columns is not None and REGISTRY[result.variant].fixed_state:
        line += " " + column_gauge(result, t)
    return f"<p>{line}</p>"


def written_columns(result, t):
    """Perpendicular keys: column → the names written there up to token t, in order."""
    held = {}
    for token in result.tokens[:t + 1]:
        if token.kind == "write":
            names = held.setdefault(result.columns[token.key], [])
            if token.key not in names:
                names.append(token.key)
    return held


def column_gauge(result, t):
    """One small box per key column, filled once a name is written there (red when two names share it)."""
    held = written_columns(result, t)
    boxes = []
    for column in range(mechanism.D_K):
        names = held.get(column, [])
        state = "free" if not names else ("shared" if len(names) > 1 else "used")
        tip = html.escape(", ".join(names)) if names else html.escape(_("free"))
        boxes.append(f'<span class="col {state}" title="{tip}"></span>')
    free = mechanism.D_K - len(held)
    words = _("key columns free: {free} of {size}").format(free=free, size=mechanism.D_K)
    shared = sum(len(names) > 1 for names in held.values())
    if shared:
        words += ", " + _("shared (striped): {shared}").format(shared=shared)
    words = html.escape(words)
    return f'<span class="gauge" role="img" aria-label="{words}">{"".join(boxes)}</span> <span>{words}</span>'


def step_caption(result, t):
    """One sentence: what token t does, in the words of the chapter (mechanism mode)."""
    token, record = result.tokens[t], REGISTRY[result.variant]
    quoted = "«" + token.text + "»"
    if token.kind == "wait":
        if record.forgets:
            return _("{token} writes and asks nothing: only the forgetting acts, and the whole summary fades "
                     "a little.").format(token=quoted)
        return _("{token} writes and asks nothing: the summary stays as it is.").format(token=quoted)
    if token.kind == "ask":
        answer = result.answers[t]
        if answer.expected is None:
            return _("{token} asks for {name}, which was never stored.").format(token=quoted, name=token.key)
        if answer.right:
            return _("{token} asks for {name}: the summary answers {answer}, right.").format(
                token=quoted, name=token.key, answer=answer.value)
        if answer.tied:
            return _("{token} asks for {name}: the summary points equally at {values}, a tie, which counts as "
                     "wrong ({expected} was stored).").format(
                token=quoted, name=token.key, values=_("{values} and {last}").format(
                    values=", ".join(answer.tied[:-1]), last=answer.tied[-1]), expected=answer.expected)
        return _("{token} asks for {name}: the summary answers {answer}, but {expected} was stored.").format(
            token=quoted, name=token.key, answer=answer.value or "—", expected=answer.expected)
    if not record.fixed_state:
        return _("{token} adds one more row to the cache: {name} and {value}, kept as they are.").format(
            token=quoted, name=token.key, value=token.value)
    earlier = [x for x in result.tokens[:t] if x.kind == "write" and x.key == token.key]
    if earlier:
        if record.corrects:
            return _("{token} stores {value} under {name} again: the correction first takes out the old "
                     "number, then writes the new one.").format(token=quoted, name=token.key, value=token.value)
        return _("{token} stores {value} under {name} again: it is added on top of the old number, which "
                 "stays.").format(token=quoted, name=token.key, value=token.value)
    if result.columns is None:
        return _("{token} stores {value} under {name}.").format(token=quoted, name=token.key, value=token.value)
    column = result.columns[token.key]
    others = [n for n in written_columns(result, t - 1).get(column, []) if n != token.key] if t > 0 else []
    if others and record.corrects:
        return _("{token}: no column is free, so {name} shares column {column} with {other}, and the correction "
                 "replaces {other}'s number with {value}.").format(
            token=quoted, name=token.key, value=token.value, column=column + 1, other=others[0])
    if others:
        return _("{token}: no column is free, so {name} shares column {column} with {other}, and the two numbers "
                 "get mixed up.").format(token=quoted, name=token.key, column=column + 1, other=others[0])
    return _("{token} stores {value} under {name}, in the free column {column}.").format(
        token=quoted, name=token.key, value=token.value, column=column + 1)


def answer_html(result, t):
    token = result.tokens[t]
    answer = result.answers[t]
    if answer.value is None and not answer.tied:
        return '<span class="muted">%s</span>' % html.escape(_("Nothing is asked at this step."))
    mark, sign = ("ok", "✓") if answer.right else ("bad", "✗")
    label = html.escape(_("Answer for {name}:").format(name=token.key))
    match = html.escape((_("match {percent}% with each") if answer.tied else _("match {percent}%"))
                        .format(percent=round(100 * answer.similarity)))
    return (f'{label} <span class="big {mark}">{html.escape(said(answer))} {sign}</span> '
            f'<span class="muted">({match})</span>')


# ----------------------------------------------------------------------------- trained mode

TRAINED_STRIP_PLAIN = N_(
    "A real example of the MQAR task (multi-query associative recall). Each box is one token, written as its number "
    "in the model's vocabulary (0 to 255): **k** marks a key (1 to 127), **v** a value (128 to 255), **·** a filler. "
    "First come the pairs, each key followed by its value; then the keys are asked again (framed boxes), and the "
    "model must answer the value that went with each one. Under each question: the model's answer, ✓ right or ✗ "
    "wrong. The highlighted box is the current token. (Keys play the part of the names of the phone book, values the "
    "part of the numbers.)")
TRAINED_STRIP_FORMULA = N_(
    "MQAR (multi-query associative recall, Arora et al. 2023): $K$ pairs $k_i\\, v_i$, then every key "
    "once more at an even position of the rest, mostly early; at a query the target is its paired value, "
    "every other position is ignored. Under a query: the $\\mathrm{argmax}$ of the model's logits there, its "
    "next token. Labels: token id, with k for ids below $V/2$ and v for the others ($V = 256$).")


def failure_message(failure):
    code, name = failure
    if code == "missing":
        return _("The trained model cannot be shown: its checkpoint file {file} is missing from "
                 "assets/checkpoints. The mechanism mode and the other models still work.").format(file=name)
    return _("The trained model cannot be shown: its checkpoint file {file} did not pass the checks (it is "
             "damaged, replaced or unreadable), so it was not loaded. The mechanism mode and the other models "
             "still work.").format(file=name)


def about_checkpoint(run):
    """(plain, formulas) texts about the checkpoint behind `run`."""
    config, task = run.sidecar["config"], run.sidecar.get("task", {})
    pairs = task.get("kv_pairs", [])
    pairs = ", ".join(str(k) for k in (pairs if isinstance(pairs, list) else [pairs]))
    accuracy = format_number(100 * run.sidecar.get("val_accuracy", 0.0), 1)
    plain = _("**A trained model.** Here the summary belongs to a small model that learned this task by "
              "itself. A checkpoint is the file that keeps what it learned (its weights: {weights} numbers), "
              "so that the same model can be loaded again, exactly.").format(weights=format_number(run.weights))
    if not REGISTRY[run.variant].fixed_state:
        plain += " " + _("It has {layers} layers, each keeping every token it has read (its KV cache).").format(
            layers=config["n_layers"])
    else:
        plain += " " + _("It has {layers} layers, each with a summary of {size} × {size} numbers.").format(
            layers=config["n_layers"], size=config["d_k"])
    plain += " " + _("Nobody chose its keys, values and questions: the model learned to make them from the "
                     "tokens, so the patterns in the pictures are its own.")
    plain += "\n\n" + _("It was trained on examples with {pairs} pairs; on examples it had never seen it "
                         "answered {accuracy}% of the questions right. Try other numbers of pairs and other "
                         "examples.").format(pairs=pairs, accuracy=accuracy)
    formulas = _("**Checkpoint** {file}: TinyLM with {layers} layers of {model}, width {width}, heads per "
                 "layer {heads}, vocabulary {vocab}; trained on MQAR with L = {length} and K ∈ {{{pairs}}}; "
                 "validation accuracy {accuracy}%. Weights, configuration and checksums are verified when it "
                 "is loaded.").format(
        file=path_of(run.variant).name, layers=config["n_layers"], model=running_name(run.variant),
        width=config["d_model"], heads=config["n_heads"], vocab=config["vocab_size"],
        length=task.get("seq_len", TRAINED_LENGTH), pairs=pairs, accuracy=accuracy)
    formulas += "\n\n" + _("Each layer makes $q_t$, $k_t$, $v_t$ and its gates as learned projections of "
                            "its input, after a short causal convolution that lets $k_t$ carry the token "
                            "before it: that is how a value gets bound to its key. Run here token by token "
                            "with the recurrent form, the records of every layer kept for the pictures.")
    return plain, formulas


def trained_strip(run):
    """Trained mode: one box per token id (k, v or filler), the model's answer under each query."""
    vocab, predictions = run.vocab_size, run.predictions
    boxes = []
    for i, token in enumerate(run.inputs.tolist()):
        kind = "filler" if token == 0 else ("key" if token < vocab // 2 else "value")
        classes = ["tok", kind]
        below = ""
        if run.asked(i):
            classes.append("ask")
            right = run.right(i)
            below = '<span class="%s">%s %s</span>' % ("ok" if right else "bad",
                                                      html.escape(token_label(int(predictions[i]), vocab)),
                                                      "✓" if right else "✗")
        boxes.append(f'<div class="{" ".join(classes)}" data-step="{i}">{html.escape(token_label(token, vocab))}'
                     f'<span class="answer">{below}</span></div>')
    return f'<div class="strip compact">{"".join(boxes)}</div>'


def trained_memory_line(run, t):
    record = run.layers[0][t]
    if not REGISTRY[run.variant].fixed_state:
        text = _("Memory used: KV cache {bytes} bytes per layer after {t} tokens, and growing with every "
                 "token.").format(bytes=format_number(record.kv_cache_bytes), t=t + 1)
    else:
        text = _("Memory used: state {bytes} bytes per layer, the same at every step.").format(
            bytes=format_number(record.state_bytes))
    return f"<p>{html.escape(text)}</p>"


def prediction_html(run, t):
    """The model's answer at a query (✓/✗, how sure), and the score so far."""
    vocab = run.vocab_size
    right, asked = run.score(t)
    score = html.escape(_("Right so far: {right} of {asked}.").format(right=right, asked=asked))
    if not run.asked(t):
        now = '<span class="muted">%s</span>' % html.escape(_("Nothing is asked at this step."))
        return f"{now} {score}"
    predicted, expected = int(run.predictions[t]), int(run.targets[t])
    mark, sign = ("ok", "✓") if predicted == expected else ("bad", "✗")
    label = html.escape(_("Question {key}: the model answers").format(key=token_label(int(run.inputs[t]), vocab)))
    sure = html.escape(_("sure at {percent}%").format(percent=format_number(100 * run.confidence(t), 0)))
    answer = f'<span class="big {mark}">{html.escape(token_label(predicted, vocab))} {sign}</span>'
    if predicted != expected:
        answer += " " + html.escape(_("(the right answer is {value})").format(value=token_label(expected, vocab)))
    return f'{label} {answer} <span class="muted">({sure})</span><br>{score}'


def readout_html(result, t):
    """The line under the read-out at token t: the answer at a question. At a write the read-out only reads back
    the pair just written (the token's label is its query), which answers nothing that was asked: it is not shown
    as an answer."""
    if result.tokens[t].kind == "ask":
        return answer_html(result, t)
    return '<span class="muted">%s</span>' % html.escape(_("Nothing is asked at this step."))
