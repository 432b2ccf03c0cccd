"""Allow `python -m agentsvc`."""

from agentsvc.cli import main

raise SystemExit(main())
