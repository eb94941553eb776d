"""A function for tests/test_checkpoint.py's live API test (gradgen.grad reads its file)."""


def euler(a, b, *, steps=10):
    x = 0.2
    for step in range(steps):
        x = x + 0.02 * (a * x - b * x**3)
    return x
