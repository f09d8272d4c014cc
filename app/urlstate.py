"""The URL holds every control, so a link reopens the same view; what comes in from it is untrusted.

    values, notices = read_query(Store, {"variant": "variant", "alpha": "alpha"}, pn.state.session_args)
    store = Store(**values)                  # constructor: no watcher fires on half-applied values
    write_query(store, {"variant": "variant", "alpha": "alpha"})   # from now on, changes go to the URL

`read_query` checks each value against its parameter's declaration (type, bounds, choices, length):
a malformed value is replaced by the default, an out-of-range one is clamped, and each fix comes back
as a notice (already translated) for the page to show. Nothing here can raise on user input.
"""
import json
import math
import re

import param

from lineare.app.i18n import _, format_number

MAX_TEXT = 500            # characters kept from a text value
_SHOWN = 40               # characters of a rejected value quoted back in a notice
_INTEGER = re.compile(r"^[+-]?\d{1,12}$")
# URL keys that count from 0 where the page counts from 1 (app/components/controls.py example_input): their
# notices tell the numbers as the student sees them
COUNTED_FROM_ONE = frozenset({"example"})


def read_query(owner, mapping, args):
    """Clean values for `owner`'s parameters from query args ({key: [bytes]}); returns (values, notices).

    `owner` is a Parameterized class or instance; `mapping` maps parameter name → URL key.
    Keys absent from the URL are left out of `values` (the parameter keeps its default).
    """
    values, notices = {}, []
    for name, key in mapping.items():
        raw = (args or {}).get(key)
        if not raw:
            continue
        text = raw[-1].decode("utf-8", errors="replace") if isinstance(raw[-1], bytes) else str(raw[-1])
        value, notice = _clean(owner.param[name], key, text)
        values[name] = value
        if notice:
            notices.append(notice)
    return values, notices


def write_query(obj, mapping):
    """Keep the URL of this session in step with `obj`'s parameters (now and on every change)."""
    import panel as pn

    def push(*events):
        location = pn.state.location
        if location is None:
            return
        names = [e.name for e in events] if events else list(mapping)
        location.update_query(**{mapping[n]: serialize(getattr(obj, n)) for n in names})

    # the browser reports its own URL once the page has loaded; write ours after that, not before
    if pn.state.curdoc is not None and pn.state.location is not None:
        pn.state.onload(push)
    else:
        push()
    return obj.param.watch(push, list(mapping))


def serialize(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _clean(parameter, key, text):
    default = parameter.default
    shown = text if len(text) <= _SHOWN else text[:_SHOWN] + "…"
    rejected = lambda used: _("The link gave “{key}” the value “{value}”, which is not valid here: "
                              "{used} is used instead.").format(key=key, value=shown, used=serialize(used))
    if isinstance(parameter, param.Boolean):
        lowered = text.strip().lower()
        if lowered in ("true", "1", "yes", "on"):
            return True, None
        if lowered in ("false", "0", "no", "off"):
            return False, None
        return default, rejected(default)
    if isinstance(parameter, param.Selector):
        choices = [str(c) for c in parameter.objects]
        if text in choices:
            return parameter.objects[choices.index(text)], None
        return default, rejected(default)
    if isinstance(parameter, (param.Integer, param.Number)):
        number = _number(text, integer=isinstance(parameter, param.Integer))
        counted = key in COUNTED_FROM_ONE
        if number is None:
            if counted:
                return default, _("The link's “{key}={value}” is not an example number: example {used} is "
                                  "shown.").format(key=key, value=shown, used=format_number(default + 1))
            return default, rejected(default)
        low, high = parameter.bounds or (None, None)
        clamped = number
        if low is not None:
            clamped = max(clamped, low)
        if high is not None:
            clamped = min(clamped, high)
        if clamped == number:
            return number, None
        if counted:
            return clamped, _("The link's “{key}={value}” asks for example {asked}, but the examples go from "
                              "{low} to {high}: example {used} is shown.").format(
                key=key, value=shown, asked=format_number(number + 1), low=format_number(low + 1),
                high=format_number(high + 1), used=format_number(clamped + 1))
        if low is not None and high is not None:
            return clamped, _("The link gave “{key}” the value {value}, outside the range {low} to {high}: "
                              "{used} is used instead.").format(
                key=key, value=shown, low=serialize(low), high=serialize(high), used=serialize(clamped))
        limit = (_("The link gave “{key}” the value {value}, below the least allowed: {used} is used instead.")
                 if high is None else
                 _("The link gave “{key}” the value {value}, above the most allowed: {used} is used instead."))
        return clamped, limit.format(key=key, value=shown, used=serialize(clamped))
    if isinstance(parameter, param.String):
        if len(text) > MAX_TEXT:
            return text[:MAX_TEXT], _("The link's text for “{key}” was too long: only its first {limit} "
                                      "characters are used.").format(key=key, limit=MAX_TEXT)
        return text, None
    try:                                         # any other kind: let param judge, fall back quietly
        value = json.loads(text)
        parameter._validate(value)
        return value, None
    except Exception:
        return default, rejected(default)


def _number(text, integer):
    text = text.strip()
    if len(text) > 32:
        return None
    if integer:
        return int(text) if _INTEGER.match(text) else None
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None
