"""axe-core, the accessibility engine the browser tests inject into each page they check.

The version is the npm package's (tests/ui/package.json pins it and package-lock.json its checksum): the pip package
axe-playwright-python carried axe-core 4.12, two releases behind. `npm ci` installs it into tests/ui/node_modules
(the first test that needs it does so when it is missing, from the npm registry; `.ci/run` makes sure npm is there).
axe-core is MPL-2.0: it is used by the tests only, never shipped with the app.
"""
import json
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "node_modules" / "axe-core" / "axe.min.js"
WANTED = json.loads((HERE / "package.json").read_text(encoding="utf-8"))["devDependencies"]["axe-core"]
# what the pages must not have: WCAG 2.0-2.2 A and AA, and axe's best practices (landmarks, one main, unique names)
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"]
IMPACTS = ("critical", "serious", "moderate")


def axe_source():
    """The text of axe.min.js at the pinned version, installed first if it is missing; RuntimeError if it cannot be."""
    if not SOURCE.exists():
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError("axe-core is not installed and there is no npm to install it (npm ci in tests/ui)")
        done = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=HERE,
                              capture_output=True, text=True, timeout=300)
        if done.returncode != 0 or not SOURCE.exists():
            raise RuntimeError(f"npm ci in tests/ui failed: {done.stderr[-600:]}")
    installed = json.loads((SOURCE.parent / "package.json").read_text(encoding="utf-8"))["version"]
    if installed != WANTED:
        raise RuntimeError(f"tests/ui/node_modules holds axe-core {installed}, not {WANTED}: run npm ci in tests/ui")
    return SOURCE.read_text(encoding="utf-8")


def violations(page, source, exempt=()):
    """axe's critical, serious and moderate violations of the loaded page, as sentences, less those `exempt` lists
    as (rule, a part of the element's selector, why)."""
    if not page.evaluate("typeof window.axe === 'object' && !!window.axe.run"):
        page.evaluate(source)
    version = page.evaluate("axe.version")
    assert version == WANTED, f"axe-core {version} ran, not {WANTED}"
    result = page.evaluate("(tags) => axe.run(document, {runOnly: {type: 'tag', values: tags}})", TAGS)
    found = []
    for violation in result["violations"]:
        if violation["impact"] not in IMPACTS:
            continue
        for node in violation["nodes"]:
            where = " ".join(str(t) for t in node["target"])
            if not any(rule == violation["id"] and part in where for rule, part, _why in exempt):
                found.append(f'{violation["impact"]} {violation["id"]} at {where}: {node["failureSummary"][:160]}')
    return found
