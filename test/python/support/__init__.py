"""What the test files share: moving arrays to and from a kernel's device
(`devices`), the float32 summation bound that float32 sums and products are
checked within (`bounds`), the repository's root (`ROOT`), and the child
scripts some tests run in a process of their own (`assert_child.py`,
`explicit_ops.py`).
`sanitize_kernels.py` is the GPU machine's compute-sanitizer set (scripts/gpu.sh
sanitize), built from the tests' programs."""

import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
