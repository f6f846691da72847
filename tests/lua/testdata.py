"""testdata.py — what the Lua tests' Python scripts share: writing a
.safetensors file (standard struct + json, independent of kiln's reader)
and a `kiln check` data set (ONNX TensorProto .pb files)."""
import json
import os
import struct

import numpy as np

DTYPES = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16",
          np.dtype(np.int64): "I64", np.dtype(np.int32): "I32"}


def write_safetensors(path, tensors):
    """tensors: name -> numpy array, written in the given order."""
    header, blobs, offset = {}, [], 0
    for name, array in tensors.items():
        data = np.ascontiguousarray(array).tobytes()
        header[name] = {"dtype": DTYPES[array.dtype], "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def write_data_set(folder, inputs, outputs):
    """inputs, outputs: lists of (name, numpy array), in the graph's order."""
    from onnx import numpy_helper
    os.makedirs(folder, exist_ok=True)
    for kind, items in (("input", inputs), ("output", outputs)):
        for k, (name, array) in enumerate(items):
            tensor = numpy_helper.from_array(np.asarray(array), name)
            with open(os.path.join(folder, f"{kind}_{k}.pb"), "wb") as f:
                f.write(tensor.SerializeToString())
