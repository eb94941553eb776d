"""Golden files: the committed generated modules are exactly what the compiler writes now."""

from pathlib import Path

import pytest

from gradgen import compile_source, load_module
from regenerate_goldens import WRT

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.py") if (ROOT / "generated" / f"{p.stem}_grad.py").exists())


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_generated_file_is_byte_identical(example):
    golden = (ROOT / "generated" / f"{example.stem}_grad.py").read_bytes()
    compiled = compile_source(example.read_bytes(), f"examples/{example.name}", wrt=WRT.get(example.stem))
    assert compiled.text.encode("utf-8") == golden


def test_seed_network_values_and_gradients():
    text = (ROOT / "generated" / "seed_net_grad.py").read_text()
    module = load_module(text, "seed_net_grad")
    assert module.loss_grad() == (1.0, 2.0, 1.0, 1.0, 2.0)
    value, grads = module.loss_value_and_grad()
    assert value == 1.0 and grads == (1.0, 2.0, 1.0, 1.0, 2.0)


def test_seed_backward_pass_reads_like_the_hand_written_one():
    text = (ROOT / "generated" / "seed_net_grad.py").read_text()
    body = text.split("def loss_grad(")[1].split("\n\n\ndef ")[0]
    code = [line.strip() for line in body.splitlines()[1:] if line.strip() and not line.strip().startswith("#")]
    code = code[code.index('"""') + 1:]
    assert code == [
        "z1 = w1 * x1 + w2 * x2 + b1",
        "h = sigmoid(z1)",
        "yhat = w3 * h + b2",
        "dL_dyhat = 2 * (yhat - y)",
        "dL_dw3 = dL_dyhat * h",
        "dL_dh = dL_dyhat * w3",
        "dL_db2 = dL_dyhat",
        "dL_dz1 = dL_dh * h * (1 - h)",
        "dL_dw1 = dL_dz1 * x1",
        "dL_dw2 = dL_dz1 * x2",
        "dL_db1 = dL_dz1",
        "return dL_dw1, dL_dw2, dL_db1, dL_dw3, dL_db2",
    ]


def test_generated_module_imports_only_numpy_and_math():
    for path in (ROOT / "generated").glob("*_grad.py"):
        imports = [line for line in path.read_text().splitlines() if line.startswith(("import ", "from "))]
        assert set(imports) <= {"import math", "import numpy as np"}, path


def _function_source(text, name):
    return f"def {name}(" + text.split(f"\ndef {name}(")[1].split("\n\n\ndef ")[0]


def test_euler_fit_saves_exactly_one_float_per_step():
    """Tapenade's "to be recorded": only the x each step overwrites is kept, on a plain list."""
    text = (ROOT / "generated" / "ode_fit_grad.py").read_text()
    grad = _function_source(text, "loss_grad")
    assert grad.count(".append(") == 1 and "x_stack.append(x)" in grad
    assert grad.count(".pop()") == 1 and "x = x_stack.pop()" in grad
    assert "for step in reversed(range(N_STEPS)):" in grad
    module = load_module(text, "ode_fit_grad")
    saved = []

    class Recording(list):
        def append(self, value):
            saved.append(value)
            super().append(value)

    namespace = dict(vars(module))
    exec(compile(grad.replace("x_stack = []", "x_stack = Recording()"), "<grad>", "exec"),
         {**namespace, "Recording": Recording}, namespace)
    grads = namespace["loss_grad"]()
    assert len(saved) == module.N_STEPS and all(isinstance(v, float) for v in saved)
    assert grads == module.loss_grad()


def test_control_flow_examples_keep_their_loops():
    text = (ROOT / "generated" / "piecewise_grad.py").read_text()
    assert "while balance < 10.0:" in text and "for _ in range(iterations):" in text
    assert "for i in reversed(range(100)[:iterations]):" in text
    assert "elif r < -delta:" in text


@pytest.mark.usefixtures("fresh_cache")  # (the script compiles through gradgen.value_and_grad)
def test_mlp_training_with_the_generated_gradient_lowers_the_loss():
    import importlib.util

    spec = importlib.util.spec_from_file_location("train_mlp", ROOT / "examples" / "train_mlp.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    history = module.train(steps=60)
    assert history[0] > 1.0 and history[-1] < 0.2 * history[0]
    assert all(b <= a + 1e-9 for a, b in zip(history[10:], history[11:]))
