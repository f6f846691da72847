"""make_weights.py DIR — the small.safetensors the bad-weights cases read:
proj.weight f32[3,4] and bias f32[3] (no proj.bias)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import numpy as np  # noqa: E402

from testdata import write_safetensors  # noqa: E402

write_safetensors(os.path.join(sys.argv[1], "small.safetensors"),
                  {"proj.weight": np.ones((3, 4), np.float32), "bias": np.zeros(3, np.float32)})
