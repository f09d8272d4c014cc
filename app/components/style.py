"""Styles several pages share: page titles and headings, the lit "lamp" banner, cards, notes."""

PAGE_CSS = """
:host { width: 100%; }
h1 { margin: 0; font-size: calc(30px * var(--lineare-scale, 1)); color: #102a43; }
h2 { margin: 18px 0 4px 0; font-size: calc(23px * var(--lineare-scale, 1)); color: #102a43; }
"""
LAMP_CSS = """
:host { width: 100%; }
.lamp { border-left: 8px solid #f0b429; background: #fff8e1; border-radius: 6px; padding: 8px 14px;
        font-size: calc(24px * var(--lineare-scale, 1)); color: #102a43; }
.lamp .between { color: #52606d; }
.lamp small { display: block; font-size: calc(16px * var(--lineare-scale, 1)); color: #52606d; margin-top: 2px; }
"""
CARD_STYLE = {"border": "1px solid #d9e2ec", "border-radius": "8px", "padding": "6px", "background": "white"}
LIT_CARD_STYLE = {**CARD_STYLE, "border": "3px solid #f0b429", "background": "#fffbea"}
