"""What the checks of several A4 tasks share: the conv module, its tolerance and labels."""

from __future__ import annotations

from typing import Any

from ..probe import Tol


CONV = "minitorch.nn.conv"

TOL = Tol(rtol=1e-9, atol=1e-11)


def _conv_label(kind: str, x: tuple, w: tuple, stride: Any, padding: Any, dilation: Any, bias: bool) -> str:
    return f"{kind}(x {x}, weight {w}{', bias' if bias else ''}, stride={stride!r}, padding={padding!r}, dilation={dilation!r})"
