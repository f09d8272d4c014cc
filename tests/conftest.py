import os
import sys

# lets test modules `import inputs` / `import reference` from this folder
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
