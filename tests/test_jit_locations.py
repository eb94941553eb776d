"""--jit numba refusals of the forward pass (where no `# line N` comment cites the user's
line) point at the call numba refuses, found through the lowered IR's call locations, and
name it as the user wrote it; not at the function's `def`."""

import pytest

from gradgen import compile_source
from gradgen.errors import CompileError

CASES = [
    ("a call the user wrote, respelled",
     "import numpy as np\n\n\ndef loss(a: float, b: float):\n    v = np.array([a, b])\n"
     "    n = np.linalg.norm(v)\n    return n * a + b\n",
     "loss.py:5:9: --jit numba: the array function np.array (written np.stack in the generated code); --jit numba "
     "covers scalar code (numbers, if/for/while, math calls): compile this file without --jit\n"
     "        v = np.array([a, b])\n            ^"),
    ("nested in a temporary gradgen named",
     "import numpy as np\n\n\ndef loss(a: float, b: float):\n    t = a * b\n"
     "    n = t * np.linalg.norm(np.array([a, t]))\n    return n + b\n",
     "loss.py:6:28: --jit numba: the array function np.array (written np.stack in the generated code); --jit numba "
     "covers scalar code (numbers, if/for/while, math calls): compile this file without --jit\n"
     "        n = t * np.linalg.norm(np.array([a, t]))\n                               ^"),
    ("inside a loop",
     "import numpy as np\n\n\ndef loss(a: float, b: float):\n    total = 0.0\n    for i in range(3):\n"
     "        c = a * i\n        total = total + np.sum(np.ones(4) * c) * b\n    return total\n",
     "loss.py:8:25: --jit numba: the array function np.sum; --jit numba covers scalar code (numbers, "
     "if/for/while, math calls): compile this file without --jit\n"
     "            total = total + np.sum(np.ones(4) * c) * b\n                            ^"),
]


@pytest.mark.parametrize("text, message", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_forward_pass_refusal_points_at_the_call(text, message):
    compile_source(text, "loss.py")  # the plain module is written
    with pytest.raises(CompileError) as caught:
        compile_source(text, "loss.py", jit="numba")
    assert caught.value.format() == message
