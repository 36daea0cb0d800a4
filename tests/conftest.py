import sys
from pathlib import Path

# The program imports `components` as its own top-level package, as `pulumi up` runs it.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
