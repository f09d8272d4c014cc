"""The page /parallel-recurrent, for `panel serve app/pages/*.py --index home` (see app/serve.py)."""
from lineare.app.shell import serve

serve("parallel-recurrent")
