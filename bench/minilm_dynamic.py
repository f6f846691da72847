#!/usr/bin/python3
"""minilm_dynamic.py OUT.onnx [--dir build/minilm] — the real all-MiniLM-L6-v2
(tools/minilm.py's graph, after `tools/minilm.py export`) exported with
dynamic axes: batch and sequence symbolic in every input and output
(sentence_embedding: batch), the way a service running it in ONNX Runtime
exports it. bench/batch.py times ORT on it, each batch padded to its
longest sentence. Debian's python3-torch 1.13 (never a pip torch)."""
import argparse
import os
import sys
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import minilm  # noqa: E402


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--dir", default=os.environ.get("KILN_MINILM_DIR", os.path.join(here, "..", "build", "minilm")))
    a = ap.parse_args()
    import torch
    model_dir = os.path.join(a.dir, "model")
    if not os.path.exists(os.path.join(model_dir, "model.safetensors")):
        sys.exit(f"minilm_dynamic: {model_dir}/model.safetensors is not there; run tools/minilm.py export first")
    wrapper = minilm.onnx_wrapper(minilm.load_model(model_dir))
    ids = torch.ones(2, 16, dtype=torch.int64)
    axes = {0: "batch", 1: "sequence"}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch 1.13's own shape-inference warnings
        torch.onnx.export(wrapper, (ids, ids, ids * 0), a.out, opset_version=minilm.OPSET,
                          input_names=["input_ids", "attention_mask", "token_type_ids"],
                          output_names=["last_hidden_state", "sentence_embedding"],
                          dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_type_ids": axes,
                                        "last_hidden_state": axes, "sentence_embedding": {0: "batch"}})


if __name__ == "__main__":
    main()
