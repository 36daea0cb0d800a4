import sys

from gpu_nodes.cli.main import main

sys.exit(main())
