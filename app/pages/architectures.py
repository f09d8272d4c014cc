"""The page /architectures, for `panel serve app/pages/*.py --index home` (see app/serve.py)."""
from lineare.app.shell import serve

serve("architectures")
