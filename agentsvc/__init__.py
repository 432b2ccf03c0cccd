"""agentsvc: self-hosted configurable AI chat agents for websites."""

__version__ = "0.1.0"
