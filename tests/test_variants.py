"""The variant registry (app/variants.py) and the engine name the same variants, or fail clearly."""
import dataclasses
import re

import pytest

from lineare.app import variants
from lineare.app.components.text import to_html
from lineare.app.i18n import language, _
from lineare.engine.ops import VARIANTS


def test_registry_and_engine_agree():
    assert list(variants.REGISTRY) == list(VARIANTS)
    variants.check_registry()
    assert set(variants.ORDER) == set(VARIANTS) - {"softmax"}


def test_an_engine_variant_without_a_record_is_named():
    registry = {name: r for name, r in variants.REGISTRY.items() if name != "gla"}
    with pytest.raises(LookupError, match=r"engine variants without a registry record in app/variants.py: gla"):
        variants.check_registry(registry)


def test_a_record_without_engine_support_is_named():
    extra = dataclasses.replace(variants.REGISTRY["deltanet"], name="mamba3")
    with pytest.raises(LookupError, match=r"registry records without engine support in engine.ops.VARIANTS: mamba3"):
        variants.check_registry({**variants.REGISTRY, "mamba3": extra})
    with pytest.raises(LookupError, match=r"without a registry record.*: hyena"):
        variants.check_registry(engine_variants=(*VARIANTS, "hyena"))


def test_unknown_names_fail_clearly():
    with pytest.raises(LookupError, match="unknown variant 'mamba3'"):
        variants.variant("mamba3")


def test_a_record_must_say_where_it_sits_on_the_knob():
    lost = dataclasses.replace(variants.REGISTRY["gla"], knob=None)
    with pytest.raises(LookupError, match="gla: give exactly one of knob"):
        variants.check_registry({**variants.REGISTRY, "gla": lost})


def test_a_fixed_state_record_must_have_its_card_words():
    bare = dataclasses.replace(variants.REGISTRY["mlstm"], special=None, off_knob=None)
    with pytest.raises(LookupError, match="mlstm: a fixed-state model needs special, off_knob"):
        variants.check_registry({**variants.REGISTRY, "mlstm": bare})


def test_what_the_engine_knows_is_read_from_the_engine():
    r = variants.REGISTRY
    assert [v for v in VARIANTS if r[v].corrects] == ["deltanet", "gated_deltanet", "rwkv7"]
    assert [v for v in VARIANTS if r[v].per_channel] == ["gla", "rwkv6", "rwkv7"]
    assert not r["linear"].forgets and r["mlstm"].forgets and not r["softmax"].fixed_state


@pytest.mark.parametrize("name", VARIANTS)
def test_every_record_has_its_words_in_both_languages_and_formulas_that_convert(name):
    record = variants.REGISTRY[name]
    words = [record.label, record.rule, record.left_out, *record.table]
    for code in ("it", "en"):
        with language(code):
            assert all(_(w) for w in words)
    with language("it"):
        assert _(record.rule) != record.rule and _(record.left_out) != record.left_out
    # what a reader sees: every $…$ of the formula and of the table's cells drawn as MathML, none left as
    # its LaTeX source (the fallback for a formula latex2mathml cannot read), in both languages
    for code in ("it", "en"):
        with language(code):
            for text in (record.formula, *record.table_formula):
                shown = to_html(_(text))
                assert shown.count("<math") == len(re.findall(r"\$\$.+?\$\$|\$.+?\$", _(text))), text
                assert "<code>" not in shown and "$" not in shown, text


def test_rwkv7s_words_are_what_the_engine_and_its_layer_compute():
    """RWKV-7 (Peng et al. 2025): transition diag(w_t) − κ̂_t (a_t ⊙ κ̂_t)ᵀ and write v_t k̃_tᵀ, the same in
    the formula, the table's cells and the engine's step fed by the layer's gates (a = −κ̂, b = κ̂ ⊙ a_t)."""
    import torch

    from lineare.engine.layers import make_layer
    from lineare.engine.ops.recurrent import step_rwkv7

    record = variants.REGISTRY["rwkv7"]
    transition, write = r"\mathrm{diag}(w_t) - \hat\kappa_t (a_t \odot \hat\kappa_t)^\top", r"v_t \tilde k_t^\top"
    assert transition in record.table_formula[0] and transition in record.formula
    assert write in record.table_formula[1] and write in record.formula
    assert "b_t" not in record.table_formula[0] and r"v_t k_t^\top" not in record.table_formula[1]

    layer = make_layer("rwkv7", d_model=8, n_heads=1, d_k=4, d_v=4).double()
    generator = torch.Generator().manual_seed(5)
    x, q, k, v = (torch.randn(1, 1, *shape, generator=generator, dtype=torch.float64)
                  for shape in ((8,), (1, 4), (1, 4), (1, 4)))
    with torch.no_grad():
        layer.rate_mix.uniform_(0.2, 0.9)                    # so that k̃ differs from k
        _q, written, _v, gates = layer.gates(x, q, k, v)
    kappa, rate = -gates["a"][0, 0, 0], gates["b"][0, 0, 0] / -gates["a"][0, 0, 0]      # κ̂ and a_t
    assert torch.allclose(kappa.norm(), torch.tensor(1.0, dtype=torch.float64))
    assert not torch.allclose(written, k)                                               # the write uses k̃
    S = torch.randn(1, 1, 4, 4, generator=generator, dtype=torch.float64)
    _o, after, _write = step_rwkv7(S, q[:, 0], written[:, 0], v[:, 0], gates["g"][:, 0], gates["a"][:, 0],
                                   gates["b"][:, 0])
    w = gates["g"][0, 0, 0].exp()
    A = torch.diag(w) - torch.outer(kappa, rate * kappa)                                # diag(w) − κ̂ (a ⊙ κ̂)ᵀ
    expected = S[0, 0] @ A + torch.outer(v[0, 0, 0], written[0, 0, 0])                   # + v k̃ᵀ
    assert torch.allclose(after[0, 0], expected, atol=1e-12)


def test_no_text_writes_rwkv7s_transition_with_the_papers_a_t_as_fla_s_a():
    """In the paper a_t is the in-context learning rate; fla's diag(w) + a bᵀ uses a = −κ̂: a text that writes
    diag(w_t) + a_t b_tᵀ mixes the two."""
    from lineare.app.i18n.catalogs import extract

    assert not [m.id for m in extract() if m.id and r"a_t b_t^\top" in m.id]
