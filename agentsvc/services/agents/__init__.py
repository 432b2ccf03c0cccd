"""Agents: their definitions, the models they may use, and the widget identity secret."""
