#!/usr/bin/env python3
"""fetch_onnx_node_tests.py DIR — the ONNX 1.20.0 backend node tests, once.

    /usr/bin/python3 tools/fetch_onnx_node_tests.py build/onnx-1.20

Leaves DIR/node/ with the 1,653 node tests (model.onnx + test_data_set_*)
of onnx 1.20.0, the conformance set tests/node/run_node_tests.sh --set=onnx120
runs kiln against. They come from the onnx wheel for this machine's Python
(`pip download --no-deps --only-binary :all:`: no build, and the wheel of
every platform carries the same files), unpacked with zipfile and checked
against a pinned digest of the whole folder (sha256 of the sorted
"sha256  path" lines, as `find node -type f | sort | xargs sha256sum`
prints them). A second call finds DIR/node complete and does nothing.
Exit 0 when DIR/node is ready, 77 (CTest's skip) when the wheel cannot be
downloaded (offline, no pip), 1 when what was downloaded is not what is
pinned.
"""
import hashlib
import os
import shutil
import subprocess
import sys
import zipfile

VERSION = "1.20.0"
COUNT = 1653
DIGEST = "ed61ec42efc545b39b0e42e6346662f323f66b480878dedccc296b776ee312bf"
PREFIX = "onnx/backend/test/data/"
SKIP = 77


def say(msg):
    print(f"fetch_onnx_node_tests: {msg}", file=sys.stderr)


def folder_digest(root):
    """sha256 of 'sha256  node/NAME/...' lines sorted by path, like sha256sum."""
    lines = []
    for top, _, files in os.walk(os.path.join(root, "node")):
        for f in files:
            path = os.path.join(top, f)
            with open(path, "rb") as fh:
                h = hashlib.sha256(fh.read()).hexdigest()
            lines.append((os.path.relpath(path, root), h))
    lines.sort(key=lambda x: x[0].encode())
    text = "".join(f"{h}  {p}\n" for p, h in lines)
    return hashlib.sha256(text.encode()).hexdigest()


def main():
    if len(sys.argv) != 2:
        print("usage: fetch_onnx_node_tests.py DIR", file=sys.stderr)
        return 2
    root = os.path.abspath(sys.argv[1])
    node = os.path.join(root, "node")
    stamp = os.path.join(root, "node.ok")
    if os.path.exists(stamp) and os.path.isdir(node):
        return 0
    dl = os.path.join(root, "download")
    os.makedirs(dl, exist_ok=True)
    wheels = [f for f in os.listdir(dl) if f.startswith(f"onnx-{VERSION}-") and f.endswith(".whl")]
    if not wheels:
        say(f"pip download --no-deps onnx=={VERSION} (a wheel) into {dl}")
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
               "--disable-pip-version-check", "--retries", "1", "--timeout", "20", "-q", "-d", dl,
               f"onnx=={VERSION}"]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        wheels = [f for f in os.listdir(dl) if f.startswith(f"onnx-{VERSION}-") and f.endswith(".whl")]
        if p.returncode != 0 or not wheels:
            tail = (p.stdout.strip().splitlines() or ["(no output)"])[-1]
            say(f"SKIP: cannot download onnx=={VERSION} from PyPI (offline? no pip?): {tail}")
            return SKIP
    tmp = os.path.join(root, "unpack.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    with zipfile.ZipFile(os.path.join(dl, wheels[0])) as z:
        for name in z.namelist():
            if name.startswith(PREFIX + "node/") and not name.endswith("/"):
                rel = name[len(PREFIX):]
                if ".." in rel.split("/"):
                    say(f"{wheels[0]}: entry '{name}' climbs out of the folder")
                    return 1
                dest = os.path.join(tmp, rel)
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                with z.open(name) as src, open(dest, "wb") as out:
                    shutil.copyfileobj(src, out)
    count = len(os.listdir(os.path.join(tmp, "node"))) if os.path.isdir(os.path.join(tmp, "node")) else 0
    got = folder_digest(tmp) if count else "(nothing)"
    if count != COUNT or got != DIGEST:
        say(f"{wheels[0]}: {count} node tests with digest {got}; expected {COUNT} with {DIGEST}")
        return 1
    shutil.rmtree(node, ignore_errors=True)
    os.rename(os.path.join(tmp, "node"), node)
    shutil.rmtree(tmp, ignore_errors=True)
    with open(stamp, "w") as f:
        f.write(f"onnx {VERSION}: {COUNT} node tests, digest {DIGEST}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
