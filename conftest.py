"""Doctests over the ``ember`` package see ``ember`` already imported, as a user's session would."""

import pytest


@pytest.fixture(autouse=True)
def _ember_in_doctests(doctest_namespace):
    import ember

    doctest_namespace["ember"] = ember
