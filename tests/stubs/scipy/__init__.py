"""A stand-in for SciPy, used only when SciPy is not installed (see tests/conftest.py).

gradgen compiles `scipy.special.expit` without SciPy (its generated code defines the sigmoid
itself), but `gradgen check` runs the user's original function for finite differences, and
the corpus's expit functions import SciPy. The test extra stays pytest and hypothesis; this
stub gives those functions the same mathematics.
"""
