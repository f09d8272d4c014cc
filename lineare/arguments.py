"""What every `lineare` command's parser shares: help that shows each option's default, and types that refuse
a bad value with one line naming it (argparse then exits with status 2 and its usage, never a traceback).

    parser = argparse.ArgumentParser(prog=..., formatter_class=arguments.Formatter)
    parser.add_argument("--port", type=arguments.port, default=5006, help="where to listen")
"""
import argparse
import math


class Formatter(argparse.HelpFormatter):
    """Descriptions and epilogs wrapped by paragraph, their indented lines (examples) kept as written; each
    option's help ends with its default, unless the help says it already or there is none to say (a flag,
    an option that is off unless given)."""

    def _fill_text(self, text, width, indent):
        paragraphs = []
        for paragraph in text.strip("\n").split("\n\n"):
            lines = paragraph.split("\n")
            kept = [line for line in lines if line.startswith(" ")]
            if kept:                                    # an example, a listing: as written
                paragraphs.append("\n".join(indent + line for line in lines))
            else:
                paragraphs.append(super()._fill_text(paragraph, width, indent))
        return "\n\n".join(paragraphs)

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if (default is None or default is False or default is argparse.SUPPRESS or default == []
                or not action.option_strings or "default" in text.lower()):
            return text
        shown = ",".join(map(str, default)) if isinstance(default, (list, tuple)) else default
        return f"{text} (default: {str(shown).replace('%', '%%')})"


def _number(text, kind, what):
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def at_least(low, high=None, kind=int):
    """A type: a whole number (or with kind=float a number) from `low` to `high` (inclusive)."""
    what = "a whole number" if kind is int else "a number"

    def parse(text):
        value = _number(text, kind, what)
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(
                f"must be from {low} to {high}, got {text!r}" if high is not None else f"must be ≥ {low}, got {text!r}")
        return value
    parse.__name__ = what            # argparse names the type in its message for a ValueError
    return parse


def above(low, kind=float):
    """A type: a number greater than `low`."""
    def parse(text):
        value = _number(text, kind, "a number" if kind is float else "a whole number")
        if not value > low:
            raise argparse.ArgumentTypeError(f"must be greater than {low}, got {text!r}")
        return value
    return parse


positive = at_least(1)                       # a whole number ≥ 1
port = at_least(1, 65_535)                   # a TCP port
fraction = at_least(0.0, 1.0, kind=float)    # from 0 to 1
