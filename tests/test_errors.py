"""Every construct outside the subset is a CompileError with this exact text and place."""

import pytest

from gradgen import CompileError, compile_source

PRINT_OF_A_HELPER = "def h(x):\n    return x * x\n\n\ndef f(x):\n    print(h(x))\n    return x\n"

CASES = [
    ("syntax error", "def f(x):\n    return x +\n", {},
     "bad.py:2:15: syntax error: invalid syntax\n        return x +\n                  ^"),
    ("not UTF-8", b"def f(x):\n    return x  # caf\xe9\n", {},
     "bad.py:2:20: file is not UTF-8 (byte 0xe9)\n        return x  # caf\ufffd\n                       ^"),
    ("no functions", "x = 1\n", {},
     "bad.py: no functions found: gradgen compiles top-level 'def' functions"),
    ("unknown --function", "def f(x):\n    return x\n", {"functions": ["g"]},
     "bad.py: no function named 'g' (from --function); the file defines: f"),
    ("unknown --wrt", "def f(x, n):\n    return x\n", {"wrt": ["q"]},
     "bad.py: no parameter 'q' (from --wrt) in 'f'; the parameters are: n, x"),
    ("unknown function", "def f(x):\n    return foo(x)\n", {},
     "bad.py:2:12: unknown function 'foo': gradgen differentiates its known primitives and functions "
     "defined in this file\n        return foo(x)\n               ^"),
    ("no rule", "import numpy as np\ndef f(x):\n    return np.frobnicate(x)\n", {},
     "bad.py:3:12: no derivative rule for 'np.frobnicate' on the value of 'x' (a differentiated parameter)\n"
     "        return np.frobnicate(x)\n"
     "               ^"),
    ("recursion", "def f(x):\n    return f(x) * x\n", {},
     "bad.py:2:12: recursive call to 'f' on a depth known only when it runs: write it as a loop\n"
     "        return f(x) * x\n               ^"),
    ("recursion on a count known only when it runs",
     "def f(x, n):\n    return x if n == 0 else f(x * x, n - 1)\n\ndef g(x, n):\n    return f(x, n)\n",
     {"functions": ["g"]},
     "bad.py:2:29: recursive call to 'f' on a depth known only when it runs: write it as a loop\n"
     "        return x if n == 0 else f(x * x, n - 1)\n                                ^"),
    ("recursion with constants that never reach its base case",
     "def f(x, n):\n    return x if n == 0 else f(x * x, n - 1)\n\ndef g(x):\n    return f(x, -1)\n",
     {"functions": ["g"]},
     "bad.py:2:29: recursive call to 'f' more than 50 calls deep when unrolled: gradgen unrolls recursion whose "
     "depth constants fix when compiling, and stops there; write it as a loop\n"
     "        return x if n == 0 else f(x * x, n - 1)\n                                ^"),
    ("mutual recursion", "def g(x):\n    return f(x)\n\ndef f(x):\n    return g(x) + 1\n", {"functions": ["f"]},
     "bad.py:2:12: recursive call to 'f' on a depth known only when it runs: write it as a loop\n"
     "        return f(x)\n"
     "               ^"),
    ("generator", "def f(x):\n    yield x\n", {"functions": ["f"]},
     "bad.py:2:5: 'f' is a generator function, which returns no number: gradgen inlines a generator where a "
     "loop of the function it differentiates consumes it\n        yield x\n        ^"),
    ("global", "def f(x):\n    global k\n    return x\n", {},
     "bad.py:2:5: 'global' is not supported\n        global k\n        ^"),
    ("try", "def f(x):\n    try:\n        y = x\n    except Exception:\n        y = 0\n    return y\n", {},
     "bad.py:2:5: 'try' is not supported: gradgen differentiates one path of straight code; check the inputs "
     "before calling the function instead\n        try:\n        ^"),
    ("with", "def f(x):\n    with open('a') as fh:\n        y = x\n    return y\n", {},
     "bad.py:2:5: 'with' is not supported\n        with open('a') as fh:\n        ^"),
    ("a lambda used as a number", "def f(x):\n    g = lambda t: t\n    return x * (lambda t: t)\n", {},
     "bad.py:3:17: 'lambda' is a function, not a number\n        return x * (lambda t: t)\n                    ^"),
    ("a function chosen in a branch", "import numpy as np\n\ndef f(x):\n    if x > 0:\n        act = np.tanh\n"
     "    else:\n        act = np.sin\n    return act(x)\n", {},
     "bad.py:5:9: 'act' is bound to a function inside a branch or loop; gradgen inlines the function a call "
     "reaches, so bind it before the branch or loop\n            act = np.tanh\n            ^"),
    ("a helper that calls its parameter, named", "def apply(f, v):\n    return f(v)\n",
     {"functions": ["apply"]},
     "bad.py:1:1: 'apply' calls its parameter 'f', a function known only where 'apply' is called: compile the "
     "loss that calls 'apply' with a function (or give 'f' a default such as f=np.tanh)\n    def apply(f, v):\n"
     "    ^"),
    ("class use", "class A:\n    pass\n\ndef f(x):\n    return A(x)\n", {},
     "bad.py:5:12: 'A' is a class: gradgen differentiates plain functions only\n        return A(x)\n"
     "               ^"),
    ("class inside", "def f(x):\n    class A:\n        pass\n    return x\n", {},
     "bad.py:2:5: classes are not supported\n        class A:\n        ^"),
    ("--wrt into int()", "def f(x, n):\n    return x * int(n)\n", {"wrt": ["x", "n"]},
     "bad.py:2:16: 'n' is differentiated, but reaches int(), which has no derivative; leave it out with "
     "--wrt\n        return x * int(n)\n                   ^"),
    ("array constant", "import numpy as np\nDATA = np.load('d.npy')\ndef f(x):\n    return x * DATA\n", {},
     "bad.py:4:16: module-level 'DATA' is not a numeric constant; pass it to the function as a "
     "parameter\n        return x * DATA\n                   ^"),
    ("read before assignment", "def f(x):\n    y = y + x\n    return y\n", {},
     "bad.py:2:9: 'y' is read before it is assigned\n        y = y + x\n            ^"),
    ("tuple return", "def f(x):\n    return x, x\n", {"functions": ["f"]},
     "bad.py:2:12: gradgen differentiates functions that return one number\n        return x, x\n"
     "               ^"),
    ("no return", "def f(x):\n    y = x\n", {"functions": ["f"]},
     "bad.py:1:1: function 'f' has no 'return' at its end\n    def f(x):\n    ^"),
    ("**kwargs", "def f(x, **kw):\n    return x\n", {},
     "bad.py:1:12: **kwargs parameters are not supported: name each parameter\n    def f(x, **kw):\n"
     "               ^"),
    # messages that name the construct, never a symptom found later (each once misled)
    ("try is named, not a missing return", "def f(x):\n    try:\n        return x\n    except ValueError:\n"
     "        return 0.0\n", {},
     "bad.py:2:5: 'try' is not supported: gradgen differentiates one path of straight code; check the inputs "
     "before calling the function instead\n        try:\n        ^"),
    ("einsum with a diagonal", "import numpy as np\n\n\ndef f(A):\n    return np.einsum('ii->', A)\n", {},
     "bad.py:5:22: 'np.einsum' is supported with letters only, one per axis of each operand (no index repeated "
     "within one, no '...'), one operand per subscript; write a diagonal as np.diagonal(...) first\n"
     "        return np.einsum('ii->', A)\n                         ^"),
    ("**kwargs in a helper, not an argument count", "def h(**kwargs):\n    return kwargs['a']\n\n\ndef f(x):\n"
     "    return h(a=x)\n", {"functions": ["f"]},
     "bad.py:1:9: **kwargs parameters are not supported: name each parameter\n    def h(**kwargs):\n            ^"),
    ("*args of the loss itself", "def f(x, *args):\n    return x\n", {},
     "bad.py:1:11: *args parameters are not supported: name each parameter\n    def f(x, *args):\n              ^"),
    ("a lambda, not a numeric constant", "sq = lambda t: t * t\n\n\ndef f(x):\n    return sq(x)\n", {},
     "bad.py:5:12: 'sq' is a lambda, which gradgen does not inline yet; write it as a 'def' in this file\n"
     "        return sq(x)\n               ^"),
    ("a helper of another file, not a missing rule", "from model import sq\n\n\ndef f(x):\n    return sq(x)\n", {},
     "bad.py:5:12: no derivative rule for 'sq' on the value of 'x' (a differentiated parameter); "
     "'sq' comes from 'model', which gradgen does not read: it differentiates functions of this "
     "file, of the files beside it that it imports, and known library functions; copy the function into this file\n        return sq(x)\n"
     "               ^"),
    ("a draw from Python's random module", "import random\n\n\ndef f(x):\n    return x * random.random()\n", {},
     "bad.py:5:16: 'random.random()' draws from Python's random module, whose state the generated code cannot "
     "share: draw with NumPy (a np.random.RandomState or Generator parameter, or np.random.*), or pass the noise "
     "in as data (def f(..., *, eps))\n        return x * random.random()\n                   ^"),
    ("print of a helper's result", PRINT_OF_A_HELPER, {"functions": ["f"]},
     "bad.py:6:11: 'print(...)' may use the function's variables, module constants and library functions; 'h' "
     "is none of these here\n        print(h(x))\n              ^"),
    ("a factory, named", "def make(d):\n    def objective(p):\n        return p * d\n    return objective\n",
     {"functions": ["make"]},
     "bad.py:1:1: 'make' returns a function: a factory has no gradient of its own; write the loss as a function "
     "that calls it (`objective = make(...)`, then `return objective(params)`): the closure is inlined there\n"
     "    def make(d):\n    ^"),
    ("default not a number", "def f(x=[1]):\n    return x\n", {},
     "bad.py:1:9: the default value of 'x' must be a number\n    def f(x=[1]):\n            ^"),
    ("string", "def f(x):\n    return 'a'\n", {"functions": ["f"]},
     "bad.py:2:12: only real numbers are supported, not str constants\n        return 'a'\n"
     "               ^"),
    ("decorator", "import functools\n@functools.cache\ndef f(x):\n    return x\n", {},
     "bad.py:2:2: decorators are not supported\n    @functools.cache\n     ^"),
    ("wrong arity", "import math\ndef f(x):\n    return math.exp(x, x)\n", {},
     "bad.py:3:12: 'math.exp' takes 1 argument, got 2\n        return math.exp(x, x)\n               ^"),
    ("max of one", "def f(x):\n    return max(x)\n", {},
     "bad.py:2:12: 'max' needs two or more arguments\n        return max(x)\n               ^"),
    ("bit operator", "def f(x):\n    return x << 2\n", {},
     "bad.py:2:12: operator '<<' is not supported\n        return x << 2\n               ^"),
    ("unpacking mismatch", "def f(x):\n    a, b = x, x, x\n    return a\n", {},
     "bad.py:2:12: tuple unpacking needs a tuple of 2 values on the right\n        a, b = x, x, x\n"
     "               ^"),
    ("code after return", "def f(x):\n    return x\n    y = 2\n", {},
     "bad.py:3:5: code after 'return' is never run\n        y = 2\n        ^"),
    ("unknown name", "def f(x):\n    return x * k\n", {},
     "bad.py:2:16: unknown name 'k'\n        return x * k\n                   ^"),
    ("helper argument", "def g(a):\n    return a\n\ndef f(x):\n    return g(x, b=1)\n", {"functions": ["f"]},
     "bad.py:5:17: 'g' has no parameter 'b'\n        return g(x, b=1)\n                    ^"),
    # control flow: what stays outside the subset
    ("while True without an exit", "def f(x):\n    while True:\n        x = x * 2\n    return x\n", {},
     "bad.py:2:5: 'while True:' never ends: it has no 'break' and no 'return'; leave it with one (if converged: "
     "break)\n        while True:\n        ^"),
    ("code after a while True left by returning",
     "def f(x):\n    while True:\n        x = x * 2\n        if x > 1:\n            return x\n    y = x\n    return y\n",
     {}, "bad.py:6:5: code after a 'while True:' loop that leaves only by 'return' is never run\n        y = x\n"
     "        ^"),
    ("a tuple returned from inside a loop",
     "def f(x):\n    for i in range(3):\n        if x > 1:\n            return x, x\n    return x\n", {},
     "bad.py:4:20: returning a tuple from inside a loop is not supported: return it after the loop ('break' out of "
     "it first)\n                return x, x\n                       ^"),
    ("a list returned from inside a loop",
     "def g(x):\n    for i in range(3):\n        if x > 1:\n            return [x]\n    return [x]\n\n"
     "def f(x):\n    return sum(g(x))\n", {"functions": ["f"]},
     "bad.py:4:20: returning a list from inside a loop is not supported: return it after the loop ('break' out of "
     "it first)\n                return [x]\n                       ^"),
    ("a list variable returned from inside a loop",
     "def g(x):\n    hs = [x]\n    for i in range(3):\n        if x > 1:\n            return hs\n    return hs\n\n"
     "def f(x):\n    return sum(g(x))\n", {"functions": ["f"]},
     "bad.py:5:20: returning a list from inside a loop is not supported: return it after the loop ('break' out of "
     "it first)\n                return hs\n                       ^"),
    ("return inside a loop that is unrolled",
     "def g(x, sizes):\n    for s in sizes:\n        x = x * s\n        if x > 1:\n            return x\n    return x\n\n"
     "def f(x):\n    return g(x, [1, 2])\n", {"functions": ["f"]},
     "bad.py:5:13: 'return' inside a loop over a list known when compiling is not supported (gradgen unrolls it): "
     "return after the loop\n                return x\n                ^"),
    ("return without a value in a loop",
     "def f(x):\n    for i in range(3):\n        if x > 1:\n            return\n        x = x * 2\n    return x\n", {},
     "bad.py:4:13: 'return' needs a value to differentiate\n                return\n                ^"),
    ("for-else", "def f(x):\n    for i in range(3):\n        x = x * 2\n    else:\n        x = 1.0\n    return x\n", {},
     "bad.py:2:5: 'else' on a loop is not supported\n        for i in range(3):\n        ^"),
    ("while-else", "def f(x):\n    while x < 3:\n        x = x * 2\n    else:\n        x = 1.0\n    return x\n", {},
     "bad.py:2:5: 'else' on a loop is not supported\n        while x < 3:\n        ^"),
    ("loop variable after its loop", "def f(x):\n    for i in range(3):\n        x = x * 2\n    return x * i\n", {},
     "bad.py:4:16: 'i' is read after its loop; gradgen does not support that\n        return x * i\n"
     "                   ^"),
    ("assigning the loop variable", "def f(x):\n    for i in range(3):\n        i = 2\n        x = x * i\n    return x\n", {},
     "bad.py:3:9: assigning to the loop variable 'i' inside its loop is not supported\n            i = 2\n"
     "            ^"),
    ("loop over a list of values", "def f(x):\n    for c in [x, 2.0]:\n        x = x * c\n    return x\n", {},
     "bad.py:2:14: a loop must run over range(...), a module-level tuple of numbers, or a parameter\n"
     "        for c in [x, 2.0]:\n                 ^"),
    ("range with keywords", "def f(x):\n    for i in range(3, step=1):\n        x = x * 2\n    return x\n", {},
     "bad.py:2:14: range() takes one to three positional arguments here\n        for i in range(3, step=1):\n"
     "                 ^"),
    ("--wrt into range()", "def f(x, n=3):\n    for i in range(n):\n        x = x * 2\n    return x\n", {"wrt": ["x", "n"]},
     "bad.py:2:14: 'n' is differentiated, but reaches range(), which has no derivative; leave it out with "
     "--wrt\n        for i in range(n):\n                 ^"),
    ("a path without return", "def f(x):\n    if x > 0:\n        return x\n", {},
     "bad.py:1:1: not every path through 'f' ends in a 'return'\n    def f(x):\n    ^"),
    ("writing into an element of an element",
     "import numpy as np\ndef f(x):\n    y = np.zeros((3, 3))\n    for i in range(3):\n        y[i][0] = x[i] * 2\n"
     "    return np.sum(y)\n", {},
     "bad.py:5:9: writing into 'y[i][0]' is not supported: write into a name with one index, x[i, j] = ... "
     "(not x[i][j] = ... nor x.attr[i] = ...)\n            y[i][0] = x[i] * 2\n            ^"),
    ("writing into a module constant",
     "import numpy as np\nW = np.ones(3)\ndef f(x):\n    W[0] = x\n    return np.sum(W * x)\n", {},
     "bad.py:4:5: writing into 'W' would change a module-level value for every later call; copy it first "
     "(W_local = W.copy())\n        W[0] = x\n        ^"),
    ("a write another name would see",
     "import numpy as np\ndef f(x):\n    y = x\n    y[0] = 1.0\n    return np.sum(x * y)\n", {},
     "bad.py:4:5: 'y[...] = ...' would change an array that may share memory with another name (a copy or a "
     "view) read later; write into a copy ('y = y.copy()' just before it)\n        y[0] = 1.0\n        ^"),
    ("an index that is differentiated", "import numpy as np\ndef f(x, k=1.0):\n    return x[k]\n",
     {"wrt": ["x", "k"]},
     "bad.py:3:12: 'k' is differentiated, but reaches an index, which has no derivative; leave it out with "
     "--wrt\n        return x[k]\n               ^"),
    ("a sequence used as a number", "C = (1.0, 2.0)\ndef f(x):\n    return x * C\n", {},
     "bad.py:3:16: 'C' is a sequence: only a loop may run over it\n        return x * C\n                   ^"),
    ("tuple helper, two returns", "def h(x):\n    if x > 0:\n        return x, x\n    return x, 2 * x\n\n"
     "def f(x):\n    a, b = h(x)\n    return a * b\n", {},
     "bad.py:3:9: 'h' returns a tuple, so it needs exactly one 'return', at its end\n            return x, x\n"
     "            ^"),
    ("tuple helper, wrong length", "def h(x):\n    return x, x, x\n\ndef f(x):\n    a, b = h(x)\n    return a * b\n",
     {}, "bad.py:2:12: 'h' must return a tuple of 2 values here, as its call is unpacked into 2 names\n"
     "        return x, x, x\n               ^"),
    ("in-place update of a copy", "import numpy as np\n\ndef f(a):\n    x = a * 1.0\n    y = x\n"
     "    for i in range(2):\n        x += np.cos(x)\n    return np.sum(x * y)\n", {},
     "bad.py:7:9: 'x += ...' would change an array that may share memory with another name (a copy or a "
     "view); write 'x = x + ...'\n            x += np.cos(x)\n            ^"),
    ("in-place update of a view", "import numpy as np\n\ndef f(a):\n    x = a * 1.0\n    y = x[1:]\n"
     "    x *= 2.0\n    return np.sum(y)\n", {},
     "bad.py:6:5: 'x *= ...' would change an array that may share memory with another name (a copy or a view); "
     "write 'x = x * ...'\n        x *= 2.0\n        ^"),
]


@pytest.mark.parametrize("source,kwargs,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_error_message_and_place(source, kwargs, expected):
    with pytest.raises(CompileError) as caught:
        compile_source(source, "bad.py", **kwargs)
    assert caught.value.format() == expected


WHOLE_FILE = [
    ("print of a helper's result", PRINT_OF_A_HELPER, ["h"],
     {"f": "'print(...)' may use the function's variables, module constants and library functions; 'h' is none "
           "of these here (line 6)"}),
    ("generator", "def f(x):\n    yield x\n", None,
     "bad.py:1:1: no function here has a gradient of its own: f (line 1): is a generator (it yields), not a "
     "function returning one number\n    def f(x):\n    ^"),
    ("tuple return", "def f(x):\n    return x, x\n", None,
     "bad.py:1:1: no function here has a gradient of its own: f (line 1): returns a tuple, not one number\n"
     "    def f(x):\n    ^"),
    ("no return", "def f(x):\n    y = x\n", None,
     "bad.py:1:1: no function here has a gradient of its own: f (line 1): returns nothing, not one number\n"
     "    def f(x):\n    ^"),
    ("string", "def f(x):\n    return 'a'\n", None,
     "bad.py:1:1: no function here has a gradient of its own: f (line 1): returns a string, not one number\n"
     "    def f(x):\n    ^"),
    ("no parameters", "def f():\n    return 1.0\n\n\ndef g():\n    return 2.0\n", None,
     "bad.py: no function here has a gradient of its own: f (line 1): takes no parameters; g (line 5): takes "
     "no parameters"),
]


@pytest.mark.parametrize("source,compiled,expected", [c[1:] for c in WHOLE_FILE], ids=[c[0] for c in WHOLE_FILE])
def test_a_whole_file_skips_what_it_refuses_and_names_each_when_nothing_compiles(source, compiled, expected):
    """The cases above that --function refuses: a whole file compiles the rest and skips each
    (with why), or, when nothing has a gradient, says so."""
    if compiled is None:
        with pytest.raises(CompileError) as caught:
            compile_source(source, "bad.py")
        assert caught.value.format() == expected
        return
    result = compile_source(source, "bad.py")
    assert [f.name for f in result.functions] == compiled and result.skipped == expected


def test_loop_count_parameter_is_left_out_by_default():
    compiled = compile_source("def f(x, n=3):\n    for i in range(n):\n        x = x * 2\n    return x\n", "ok.py")
    assert compiled.functions[0].wrt == ["x"]


def test_parameter_used_only_in_int_is_left_out_by_default():
    compiled = compile_source("def f(x, n):\n    return x * int(n)\n", "ok.py")
    assert compiled.functions[0].wrt == ["x"]
