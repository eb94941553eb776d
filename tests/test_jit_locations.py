"""--jit numba refusals of the forward pass (where no `# line N` comment cites the user's
line) point at the call numba refuses, found through the lowered IR's call locations, and
name it as the user wrote it; not at the function's `def`."""

import pytest

from gradgen import compile_source
from gradgen.errors import CompileError

TAIL = ("--jit numba compiles numbers, arrays, if/for/while and the NumPy functions numba has: compile this file "
        "without --jit")
CASES = [
    ("nested in a temporary gradgen named",
     "import numpy as np\n\n\ndef loss(a: float, b: float):\n    t = a * b\n"
     "    n = t * np.linalg.norm(np.roll(np.ones(3) * a, 1))\n    return n + b\n",
     f"loss.py:6:28: --jit numba: the array function np.roll; {TAIL}\n"
     "        n = t * np.linalg.norm(np.roll(np.ones(3) * a, 1))\n                               ^"),
    ("inside a loop",
     "import numpy as np\n\n\ndef loss(a: float, b: float):\n    total = 0.0\n    for i in range(3):\n"
     "        c = a * i\n        total = total + np.sum(np.sort(np.ones(4) * c, axis=0)) * b\n    return total\n",
     "loss.py:8:32: --jit numba: np.sort(..., axis=...), which numba does not compile; write np.sort without axis= "
     "(a loop, say), or compile this file without --jit\n"
     "            total = total + np.sum(np.sort(np.ones(4) * c, axis=0)) * b\n                                   ^"),
]


@pytest.mark.parametrize("text, message", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_forward_pass_refusal_points_at_the_call(text, message):
    compile_source(text, "loss.py")  # the plain module is written
    with pytest.raises(CompileError) as caught:
        compile_source(text, "loss.py", jit="numba")
    assert caught.value.format() == message
