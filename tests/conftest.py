"""What the tests share: hypothesis strategies for small random problems.

pytest puts this directory on ``sys.path`` (rootdir-relative import mode), so a test file
takes these with ``from conftest import ...``.
"""

import numpy as np
from hypothesis import strategies as st


@st.composite
def inputs(draw, n, d, low=-3.0, high=3.0):
    """An (n, d) float array of inputs in [low, high], n and d ints or strategies."""
    n = draw(n) if isinstance(n, st.SearchStrategy) else n
    d = draw(d) if isinstance(d, st.SearchStrategy) else d
    rows = st.lists(st.floats(low, high), min_size=d, max_size=d)
    return np.array(draw(st.lists(rows, min_size=n, max_size=n)), dtype=float).reshape(
        n, d
    )


@st.composite
def two_class_labels(draw, n, labels=(-1.0, 1.0)):
    """n labels from ``labels``, the first two examples one of each (both classes)."""
    pick = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    pick[0], pick[1] = 0, 1
    return np.array([labels[i] for i in pick])
