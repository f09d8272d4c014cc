"""The page /state, for `panel serve app/pages/*.py --index home` (see app/serve.py)."""
from lineare.app.shell import serve

serve("state")
