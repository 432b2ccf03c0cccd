"""Helpers shared by the test suite: settings, accounts, the error check, fake third
parties (fakes/), the PostgreSQL side of a run (pg.py) and the stacks of the browser tests.

Test modules import from here, never from another test module or a conftest; conftest.py
files hold fixtures only (tests/test_suite_shape.py checks it)."""
