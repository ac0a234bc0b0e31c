"""Gamma-family special functions: the OpInfos they make native (the op table is tests/optables/gamma.py)."""

from __future__ import annotations

import pytest
from optable import assert_opinfo_native

NATIVE = [
    "lgamma", "digamma", "polygamma.polygamma_n_0", "polygamma.polygamma_n_1", "polygamma.polygamma_n_2",
    "polygamma.polygamma_n_3", "polygamma.polygamma_n_4", "special.polygamma.special_polygamma_n_0",
    "mvlgamma.mvlgamma_p_1", "mvlgamma.mvlgamma_p_3", "mvlgamma.mvlgamma_p_5", "special.zeta", "igamma", "igammac",
    "erfinv", "special.ndtri", "special.erfcx", "special.log_ndtr",
]


@pytest.mark.parametrize("name", NATIVE)
def test_opinfo_native(name):
    assert_opinfo_native(name, [9, 26])
