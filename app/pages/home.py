"""The landing page, for `panel serve app/pages/*.py --index home` (served at / and /home)."""
from lineare.app.shell import serve

serve(None)
