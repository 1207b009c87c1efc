"""Wrong calls the generated stub of examples/typed-args must make both type checkers report
(tests/typing/typed_stubs.sh asserts each line's error, by line number, and that there are no
others). Never run."""

import numpy as np

import typed_args

typed_args.trace([[1.0, 0.0], [0.0, 1.0]])  # a list: no tensor
typed_args.trace(np.eye(2, dtype=np.int64))  # a NumPy array of another dtype (pyright only)
n: int = typed_args.zeros(3)  # a DLPackTensor used as an int
typed_args.zeros(3) + 1  # likewise
