"""Guardrails: what an agent redacts, refuses, must not say and how long a visitor's
message may be (settings), compiled for use (rules, detectors), applied to the visitor's
message (screening) and to the answer as it streams (answers), and what each hit leaves
behind (records); the service holds what the API asks of them."""
