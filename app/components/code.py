"""The engine's own source, shown on a page: from a picture to the lines of code that made it.

    pn.pane.HTML(source_html(engine.ops.recurrent.step_deltanet))

Highlighted by Pygments with inline styles (no stylesheet to fetch: the page works offline). The source
is read from the running engine with `inspect`, so what a student reads is what computed the picture.
"""
import html
import inspect
from pathlib import Path

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

ROOT = Path(__file__).resolve().parents[2]
CODE_CSS = """
:host { width: 100%; }
details { border: 1px solid #d9e2ec; border-radius: 8px; background: #fbfcfe; padding: 6px 12px; margin: 6px 0; }
summary { cursor: pointer; font-size: 17px; font-weight: 700; color: #1d4f7a; }
pre { font-size: 16px; line-height: 1.4; overflow-x: auto; margin: 6px 0; padding: 8px; border-radius: 6px; }
p { font-size: 16px; color: #323f4b; margin: 4px 0; }
"""


def source_html(function):
    """(file relative to the repository, highlighted source of `function` as HTML)."""
    path = Path(inspect.getsourcefile(function)).resolve()
    where = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
    lines, first = inspect.getsourcelines(function)
    code = highlight("".join(lines), PythonLexer(), HtmlFormatter(noclasses=True, style="friendly", nowrap=False))
    return f"{html.escape(where)}:{first}", code
