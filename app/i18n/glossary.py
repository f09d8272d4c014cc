"""The Italian glossary: one term per concept, and the variants that must not appear in Italian: the catalog and
the notebooks' **IT** paragraphs (tests/test_every_sentence.py reads every msgstr and every notebook with these,
case-insensitive, partial forms included). English terms stay only in parentheses, at their first use in a text,
next to the Italian word: "domanda (query)".

    from lineare.app.i18n.glossary import TERMS, forbidden_in
    forbidden_in("il gate dell'oblio")    # → [("forget gate", "gate dell'oblio")]
"""
import re

# concept (English) → (the Italian term, [regular expressions of the variants it replaces])
TERMS = {
    "forget gate": ("gate di oblio", [r"gate dell'oblio", r"gate d'oblio", r"(?<!\()\bforget gate"]),
    # partial forms too: "la regola con oblio" (the gated rule) is the same concept, named the wrong way
    "gated delta rule": ("regola delta con gate", [r"\bregola (?:delta )?con (?:l')?oblio", r"\bdelta rule con\b",
                                                   r"\bregola delta gated\b", r"(?<!\()\bgated delta rule"]),
    "delta rule": ("regola delta", [r"(?<![(\w])delta rule\b(?! con\b)"]),
    "group norm": ("normalizzazione di gruppo", [r"(?<!\()\bgroup norm\b"]),
    "token shift": ("spostamento dei token", [r"(?<!\()\btoken shift\b"]),
    "feature map": ("mappa di caratteristiche", [r"mappa delle feature", r"mappa di feature",
                                                 r"(?<!\()\bfeature map"]),
    "one-hot values": ("valori one-hot", [r"valori indicatori", r"valore indicatore"]),
    "multi-query associative recall": ("richiamo associativo con più domande",
                                       [r"richiamo associativo a (domande multiple|più query)"]),
    "loss": ("funzione di perdita", [r"\bla loss\b", r"\bdella loss\b"]),
    "prompt": ("testo iniziale (prompt)", [r"(?<!\()\bprompt\b"]),
    "input": ("ingresso", [r"(?<![(\w.])input\b(?![.(_])"]),
    "query": ("domanda (query)", [r"(?<![(\w-])query\b(?![)\w-])", r"\bqueries\b"]),
}


def _prose(text):
    """The running text: formulas ($…$) and code (`…`) left out."""
    return re.sub(r"\$\$.+?\$\$|\$.+?\$|`[^`]*`", " ", text, flags=re.S)


def forbidden_in(text):
    """[(concept, variant found)] in an Italian text, formulas and code left out."""
    prose = _prose(text)
    return [(concept, found.group(0)) for concept, (_term, variants) in TERMS.items()
            for variant in variants for found in re.finditer(variant, prose, re.IGNORECASE)]
