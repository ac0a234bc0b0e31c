"""The per-family op tables that tests/test_ops_generic.py runs, by family name, and the registry keys
no table reaches, each with where it is tested instead or why it is not."""

from __future__ import annotations

from optables import (bessel, capture, complex, complex_fft, data, division, gamma, grad, half, linalg, numeric, ops,
                      spatial)
from optables.untested import UNTESTED

FAMILIES = {
    "ops": ops.TABLE, "bessel": bessel.TABLE, "complex": complex.TABLE, "complex_fft": complex_fft.TABLE,
    "data": data.TABLE, "division": division.TABLE, "gamma": gamma.TABLE, "grad": grad.TABLE, "half": half.TABLE,
    "linalg": linalg.TABLE, "numeric": numeric.TABLE, "spatial": spatial.TABLE, "capture": capture.TABLE,
}

__all__ = ["FAMILIES", "UNTESTED"]
