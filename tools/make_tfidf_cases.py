"""make_tfidf_cases.py — TfIdfVectorizer cases for kiln check beyond ONNX's
node tests (which are all TF): IDF and TFIDF with weights, unigrams to
trigrams with skips, i32 and i64 tokens. ONNX Runtime's outputs are the
reference, checked first against ONNX's reference evaluator. Run with
the venv that has onnx and onnxruntime:

    build/venv/bin/python tools/make_tfidf_cases.py tests/generated/tfidf

- idf_weights: i64[2,10], 1- to 3-grams, up to 2 skips, IDF weights.
- tfidf_weights_i32: i32[9], 2- and 3-grams, up to 1 skip, TFIDF weights."""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator


def case(folder, x, elem, attrs, slots):
    node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], **attrs)
    yshape = [x.shape[0], slots] if x.ndim == 2 else [slots]
    g = helper.make_graph([node], "tfidf", [helper.make_tensor_value_info("x", elem, list(x.shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, yshape)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)])
    m.ir_version = 8
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(want, ReferenceEvaluator(m).run(None, {"x": x})[0], rtol=1e-6)
    os.makedirs(os.path.join(folder, "test_data_set_0"), exist_ok=True)
    onnx.save(m, os.path.join(folder, "model.onnx"))
    for kind, name, v in (("input", "x", x), ("output", "y", want)):
        with open(os.path.join(folder, "test_data_set_0", f"{kind}_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(v, name).SerializeToString())


def main(out):
    rng = np.random.default_rng(9)
    # unigrams 1..4, bigrams (1,2) (2,3) (3,1), trigrams (1,2,3) (4,4,1)
    pool = [1, 2, 3, 4, 1, 2, 2, 3, 3, 1, 1, 2, 3, 4, 4, 1]
    x = rng.integers(1, 5, size=(2, 10)).astype(np.int64)
    case(os.path.join(out, "idf_weights"), x, TensorProto.INT64,
         dict(mode="IDF", min_gram_length=1, max_gram_length=3, max_skip_count=2,
              ngram_counts=[0, 4, 10], ngram_indexes=list(range(9)), pool_int64s=pool,
              weights=[0.5, 1.5, 2.0, 0.25, 3.0, 1.0, 0.75, 2.5, 1.25]), 9)
    x = rng.integers(1, 5, size=(9,)).astype(np.int32)
    case(os.path.join(out, "tfidf_weights_i32"), x, TensorProto.INT32,
         dict(mode="TFIDF", min_gram_length=2, max_gram_length=3, max_skip_count=1,
              ngram_counts=[0, 4, 10], ngram_indexes=list(range(9)), pool_int64s=pool,
              weights=[0.5, 1.5, 2.0, 0.25, 3.0, 1.0, 0.75, 2.5, 1.25]), 9)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/generated/tfidf")
