#!/usr/bin/env python3
"""pk-llama against Hugging Face transformers' LlamaForCausalLM and
Qwen2ForCausalLM (issue [llama]).

An independent check of samples/llama: the same checkpoint is run by pk's
llama::Model (through pk_logits.cpp, compiled here with g++ and linked with
the build's libpk_llama.a and libpk_llama_kernels.a, whose kernels pkc
compiled) and by transformers'
LlamaForCausalLM, or Qwen2ForCausalLM for a checkpoint with pk's header
extension and q/k/v biases, built from a config of the same shape
(epsilon and RoPE base from the file) with the checkpoint's weights, in fp32
with eager attention. Not in CI: it needs torch and transformers, the venv
of bench/peers/run.sh.

    bench/peers/.venv/bin/python bench/llama/hf_compare.py            # the default models
    bench/peers/.venv/bin/python bench/llama/hf_compare.py --checkpoint stories15M.bin

Default models: random checkpoints written by pk-llama-checkpoint (--preset
tiny: GQA; a small MHA one, unshared classifier, version 1; --preset
stories15M; --preset qwen2-tiny: Qwen2, 7 query heads per kv head). For
each:

  forced  a random token sequence (BOS first, T = min(--tokens, seq_len)):
          pk token by token (every position's logits) and pk's one-call
          prefill (last position) against HF's logits at every position;
          max |dlogit| / max |logit| must be <= 1e-4 (--tolerance).
  greedy  prompt [BOS, 3 random tokens], --steps greedy tokens from each
          (pk: prefill, then one token per call; HF: the same with its KV
          cache); the sequences must be identical. Where they diverge the
          top-2 logit margin of both sides there is reported.

RoPE. llama2.c (and pk) rotate the pairs (2i, 2i+1) of each head by
pos * theta^(-2i/head_size); HF's rotate_half rotates the pairs
(i, i + head_size/2) by the same angle. The two are the same model once the
rows of wq and wk are permuted within each head: HF row c*head_size/2 + i
= llama2.c row 2i + c (c in {0, 1}, i < head_size/2). That is export.py's
permute_original (llama2.c -> HF, `to_hf_rows` here), the inverse of its
permute_reverse (HF -> llama2.c, `to_llama2c_rows`); wk uses n_kv_heads
heads; Qwen2's q and k biases take the permutation of their rows. q.k
within a head is a dot product, so permuting q and k alike leaves
the attention scores, and everything after them, unchanged; wv, wo and the
rest are not permuted. check_rope_permutation() verifies this numerically
with transformers' own LlamaRotaryEmbedding and apply_rotary_pos_emb.

Exit status: 0 when every model meets the tolerance and its greedy tokens
are identical, 1 otherwise, 2 on a usage or setup error.

bench/llama/run.sh imports load_checkpoint and build_hf_model from here.
"""

import argparse
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MAGIC = 0x616B3432  # "ak42"
EXTENSION = b"pkx1"  # pk's header extension at byte 64 (checkpoint.h)


# ---------------------------------------------------------------------------
# llama2.c checkpoints (versions 0 and 1), read with numpy


class Checkpoint:
    """A llama2.c checkpoint: its config and fp32 tensors (numpy views of a
    read-only memory map), in llama2.c's layouts: matrices [out, in], one
    slab per kind with the layers stacked on the first axis."""

    def __init__(self, path):
        self.path = path
        raw = np.memmap(path, dtype=np.uint8, mode="r")
        size = raw.size
        if size < 28:
            raise ValueError(f"{path}: too short for a header")
        magic = struct.unpack_from("<I", raw, 0)[0]
        if magic == MAGIC:
            self.version = struct.unpack_from("<i", raw, 4)[0]
            if self.version != 1:
                raise ValueError(f"{path}: version {self.version}: only fp32 "
                                 "versions 0 and 1 are compared")
            dim, hidden, layers, heads, kv_heads, vocab, seq = \
                struct.unpack_from("<7i", raw, 8)
            self.shared = bool(raw[36])
            offset = 256
            if bytes(raw[64:68]) == EXTENSION:
                flags, = struct.unpack_from("<I", raw, 68)
                self.rope_theta, self.norm_eps = \
                    struct.unpack_from("<2f", raw, 72)
                self.qkv_bias = bool(flags & 1)
        else:
            self.version = 0
            dim, hidden, layers, heads, kv_heads, vocab, seq = \
                struct.unpack_from("<7i", raw, 0)
            self.shared = vocab > 0
            vocab = abs(vocab)
            offset = 28
        if not hasattr(self, "qkv_bias"):  # llama2.c's file: Llama 2's
            self.qkv_bias, self.rope_theta, self.norm_eps = False, 1e4, 1e-5
        self.dim, self.hidden_dim, self.n_layers = dim, hidden, layers
        self.n_heads, self.n_kv_heads = heads, kv_heads
        self.vocab_size, self.seq_len = vocab, seq
        hs = dim // heads
        self.head_size = hs
        kv_dim = hs * kv_heads
        self.kv_dim = kv_dim
        if dim % heads or heads % kv_heads or hs % 2:
            raise ValueError(f"{path}: bad shape dim {dim}, {heads} heads, "
                             f"{kv_heads} kv heads")

        shapes = {
            "token_embedding": (vocab, dim),
            "rms_att": (layers, dim),
            "wq": (layers, dim, dim),
            "wk": (layers, kv_dim, dim),
            "wv": (layers, kv_dim, dim),
            "wo": (layers, dim, dim),
            "rms_ffn": (layers, dim),
            "w1": (layers, hidden, dim),
            "w2": (layers, dim, hidden),
            "w3": (layers, hidden, dim),
            "rms_final": (dim,),
            "rope_cos": (seq, hs // 2),
            "rope_sin": (seq, hs // 2),
            "wcls": (vocab, dim),
            "bq": (layers, dim),
            "bk": (layers, kv_dim),
            "bv": (layers, kv_dim),
        }
        if self.version == 0:  # run.c's order, legacy_export
            order = ["token_embedding", "rms_att", "wq", "wk", "wv", "wo",
                     "rms_ffn", "w1", "w2", "w3", "rms_final", "rope_cos",
                     "rope_sin"]
        else:  # version1_export: norms first (then pk's biases)
            order = ["rms_att", "rms_ffn", "rms_final"]
            if self.qkv_bias:
                order += ["bq", "bk", "bv"]
            order += ["token_embedding", "wq", "wk", "wv", "wo", "w1", "w2",
                      "w3"]
        if not self.shared:
            order.append("wcls")
        floats = raw[offset:].view(np.float32) if (size - offset) % 4 == 0 \
            else None
        need = sum(int(np.prod(shapes[n])) for n in order)
        if floats is None or floats.size != need:
            raise ValueError(f"{path}: {size} bytes, the header implies "
                             f"{offset + 4 * need}")
        self.tensors = {}
        at = 0
        for name in order:
            n = int(np.prod(shapes[name]))
            self.tensors[name] = floats[at:at + n].reshape(shapes[name])
            at += n
        if self.shared:
            self.tensors["wcls"] = self.tensors["token_embedding"]

    def __getitem__(self, name):
        return self.tensors[name]

    def describe(self):
        return (f"v{self.version} dim {self.dim} hidden {self.hidden_dim} "
                f"layers {self.n_layers} heads {self.n_heads}/{self.n_kv_heads} "
                f"vocab {self.vocab_size} seq {self.seq_len} "
                f"{'shared' if self.shared else 'unshared'}"
                + (f" q/k/v biases theta {self.rope_theta:g} eps "
                   f"{self.norm_eps:g}" if self.qkv_bias else ""))


def load_checkpoint(path):
    return Checkpoint(path)


# ---------------------------------------------------------------------------
# The RoPE row permutation


def to_hf_rows(w, n_heads):
    """llama2.c's rows of wq/wk -> HF's: export.py's permute_original.
    Within each head, HF row c*hs/2 + i = llama2.c row 2i + c."""
    out_dim, in_dim = w.shape
    hs = out_dim // n_heads
    return (w.reshape(n_heads, hs // 2, 2, in_dim).transpose(0, 2, 1, 3)
            .reshape(out_dim, in_dim))


def to_llama2c_rows(w, n_heads):
    """HF's rows -> llama2.c's: export.py's permute_reverse."""
    out_dim, in_dim = w.shape
    hs = out_dim // n_heads
    return (w.reshape(n_heads, 2, hs // 2, in_dim).transpose(0, 2, 1, 3)
            .reshape(out_dim, in_dim))


def llama2c_rope(x, positions, head_size, inv_freq):
    """run.c's RoPE on x [T, n*head_size] (float64): pairs (2i, 2i+1) of each
    head turned by pos * inv_freq[i], inv_freq[i] = theta^(-2i/head_size).
    The angles are float32 products and their cos/sin float32, as HF's
    LlamaRotaryEmbedding computes them (and run.c, with powf and cosf), so
    that the check compares the pairing, not the angles' rounding."""
    x = np.array(x, dtype=np.float64)
    T, width = x.shape
    freq = np.tile(np.asarray(inv_freq, dtype=np.float32),
                   width // head_size)
    ang = (np.asarray(positions, dtype=np.float32)[:, None] * freq[None, :])
    c = np.cos(ang).astype(np.float64)
    s = np.sin(ang).astype(np.float64)
    v0, v1 = x[:, 0::2].copy(), x[:, 1::2].copy()
    x[:, 0::2] = v0 * c - v1 * s
    x[:, 1::2] = v0 * s + v1 * c
    return x


def check_rope_permutation(verbose=True):
    """Checks numerically, with transformers' own rotary code, that
    HF-RoPE(x @ to_hf_rows(W).T) = permute(llama2.c-RoPE(x @ W.T)) for GQA
    and MHA shapes, that to_llama2c_rows inverts to_hf_rows, and that
    leaving the rows unpermuted does not match. Returns the worst relative
    difference of the matching case."""
    import torch
    from transformers import LlamaConfig
    from transformers.models.llama import modeling_llama as ml

    rng = np.random.default_rng(1)
    worst = 0.0
    for heads, kv_heads, hs in [(4, 2, 16), (6, 6, 48), (4, 1, 64)]:
        dim = heads * hs
        cfg = make_config(vocab=32, dim=dim, hidden=2 * dim, layers=1,
                          heads=heads, kv_heads=kv_heads, seq=512,
                          shared=True)
        rotary = ml.LlamaRotaryEmbedding(config=cfg)
        T = 40
        pos = np.concatenate([np.arange(20), rng.integers(20, 512, T - 20)])
        x = rng.standard_normal((T, dim))
        wq = rng.standard_normal((dim, dim))
        wk = rng.standard_normal((hs * kv_heads, dim))
        for w, n in [(wq, heads), (wk, kv_heads)]:
            assert np.array_equal(to_llama2c_rows(to_hf_rows(w, n), n), w)
        inv_freq = rotary.inv_freq.numpy()  # theta^(-2i/hs), float32
        ref = 1.0 / 10000.0 ** (np.arange(0, hs, 2) / hs)
        assert np.allclose(inv_freq, ref, rtol=1e-6, atol=0), "rope_theta"
        q_l = llama2c_rope(x @ wq.T, pos, hs, inv_freq)
        k_l = llama2c_rope(x @ wk.T, pos, hs, inv_freq)
        pos_t = torch.tensor(pos)[None, :]

        def hf(wq_hf, wk_hf):
            q = torch.tensor(x @ wq_hf.T).view(1, T, heads, hs).transpose(1, 2)
            k = torch.tensor(x @ wk_hf.T).view(1, T, kv_heads, hs).transpose(1, 2)
            cos, sin = rotary(q, pos_t)  # float32 angles, cast to float64
            q, k = ml.apply_rotary_pos_emb(q, k, cos, sin)
            return (q.transpose(1, 2).reshape(T, -1).numpy(),
                    k.transpose(1, 2).reshape(T, -1).numpy())

        q_h, k_h = hf(to_hf_rows(wq, heads), to_hf_rows(wk, kv_heads))
        # bring HF's back to llama2.c's order (the same row permutation on
        # the columns of the activations)
        q_back = to_llama2c_rows(q_h.T, heads).T
        k_back = to_llama2c_rows(k_h.T, kv_heads).T
        rel = max(np.abs(q_back - q_l).max() / np.abs(q_l).max(),
                  np.abs(k_back - k_l).max() / np.abs(k_l).max())
        # attention scores of every query head with its kv head agree too
        group = heads // kv_heads
        s_l = np.einsum("thd,shd->hts", q_l.reshape(T, heads, hs),
                        np.repeat(k_l.reshape(T, kv_heads, hs), group, axis=1))
        s_h = np.einsum("thd,shd->hts", q_h.reshape(T, heads, hs),
                        np.repeat(k_h.reshape(T, kv_heads, hs), group, axis=1))
        rel = max(rel, np.abs(s_l - s_h).max() / np.abs(s_l).max())
        q_bad, _ = hf(wq, wk)
        bad = np.abs(q_bad - q_l).max() / np.abs(q_l).max()
        if verbose:
            print(f"  RoPE permutation, {heads} heads / {kv_heads} kv heads, "
                  f"head_size {hs}, positions up to {pos.max()}: "
                  f"permuted rel diff {rel:.1e}, unpermuted {bad:.2f}")
        assert rel < 1e-6, rel
        assert bad > 0.1, bad
        worst = max(worst, rel)
    return worst


# ---------------------------------------------------------------------------
# The Hugging Face model


def make_config(vocab, dim, hidden, layers, heads, kv_heads, seq, shared,
                qwen2=False, theta=10000.0, eps=1e-5):
    """A LlamaConfig, or a Qwen2Config (q/k/v biases, no sliding window)."""
    import transformers
    from transformers import LlamaConfig, Qwen2Config

    kw = dict(vocab_size=vocab, hidden_size=dim, intermediate_size=hidden,
              num_hidden_layers=layers, num_attention_heads=heads,
              num_key_value_heads=kv_heads, hidden_act="silu",
              max_position_embeddings=seq, rms_norm_eps=eps,
              tie_word_embeddings=shared, bos_token_id=1, eos_token_id=2)
    if qwen2:
        kw.update(use_sliding_window=False)
    else:
        kw.update(attention_bias=False, mlp_bias=False)
    if int(transformers.__version__.split(".")[0]) >= 5:
        kw["rope_parameters"] = {"rope_type": "default",
                                 "rope_theta": float(theta)}
    else:
        kw["rope_theta"] = float(theta)
        kw["rope_scaling"] = None
    return (Qwen2Config if qwen2 else LlamaConfig)(**kw)


def build_hf_model(ck, permute=True, eps=None, theta=None, biases=True):
    """LlamaForCausalLM, or Qwen2ForCausalLM for a checkpoint with q/k/v
    biases (fp32, eager attention), holding `ck`'s weights, wq and wk rows
    (and bq, bk) permuted for HF's rotate_half RoPE. Negative controls:
    permute=False leaves them as llama2.c has them; eps and theta replace
    the file's; biases=False zeroes Qwen2's biases."""
    import torch
    from transformers import AutoModelForCausalLM

    cfg = make_config(ck.vocab_size, ck.dim, ck.hidden_dim, ck.n_layers,
                      ck.n_heads, ck.n_kv_heads, ck.seq_len, ck.shared,
                      qwen2=ck.qkv_bias,
                      theta=ck.rope_theta if theta is None else theta,
                      eps=ck.norm_eps if eps is None else eps)
    model = AutoModelForCausalLM.from_config(
        cfg, attn_implementation="eager").to(torch.float32)
    want = "Qwen2ForCausalLM" if ck.qkv_bias else "LlamaForCausalLM"
    assert type(model).__name__ == want, type(model)
    assert model.config._attn_implementation == "eager"
    perm = to_hf_rows if permute else (lambda w, n: w)
    sd = {"model.embed_tokens.weight": ck["token_embedding"],
          "model.norm.weight": ck["rms_final"]}
    for i in range(ck.n_layers):
        p = f"model.layers.{i}."
        sd[p + "input_layernorm.weight"] = ck["rms_att"][i]
        sd[p + "self_attn.q_proj.weight"] = perm(ck["wq"][i], ck.n_heads)
        sd[p + "self_attn.k_proj.weight"] = perm(ck["wk"][i], ck.n_kv_heads)
        sd[p + "self_attn.v_proj.weight"] = ck["wv"][i]
        if ck.qkv_bias:  # a bias is a column: permuted like the rows
            keep = 1.0 if biases else 0.0
            sd[p + "self_attn.q_proj.bias"] = keep * perm(
                ck["bq"][i][:, None], ck.n_heads)[:, 0]
            sd[p + "self_attn.k_proj.bias"] = keep * perm(
                ck["bk"][i][:, None], ck.n_kv_heads)[:, 0]
            sd[p + "self_attn.v_proj.bias"] = keep * ck["bv"][i]
        sd[p + "self_attn.o_proj.weight"] = ck["wo"][i]
        sd[p + "post_attention_layernorm.weight"] = ck["rms_ffn"][i]
        sd[p + "mlp.gate_proj.weight"] = ck["w1"][i]
        sd[p + "mlp.down_proj.weight"] = ck["w2"][i]
        sd[p + "mlp.up_proj.weight"] = ck["w3"][i]
    if not ck.shared:
        sd["lm_head.weight"] = ck["wcls"]
    params = dict(model.named_parameters())  # a tied lm_head is not listed
    if set(params) != set(sd):
        raise RuntimeError(f"parameters: HF has {sorted(set(params) - set(sd))} "
                           f"we lack, we have {sorted(set(sd) - set(params))} "
                           "HF lacks")
    with torch.no_grad():
        for name, value in sd.items():
            t = params[name]
            assert tuple(t.shape) == value.shape, (name, t.shape, value.shape)
            t.copy_(torch.from_numpy(np.array(value, dtype=np.float32)))
    tied = model.lm_head.weight.data_ptr() == \
        model.model.embed_tokens.weight.data_ptr()
    assert tied == ck.shared, "lm_head tying differs from the checkpoint"
    assert all(p.dtype == torch.float32 for p in model.parameters())
    model.eval()
    return model


def hf_logits(model, tokens):
    """Logits [T, vocab] at every position of `tokens`, one forward pass."""
    import torch
    with torch.no_grad():
        out = model(input_ids=torch.tensor([tokens], dtype=torch.long),
                    use_cache=False)
    return out.logits[0].float().numpy()


def _cache_kwarg(model):
    """The KV cache's name in forward(): `cache` from transformers 5.x
    (`past_key_values` deprecated), `past_key_values` before."""
    import inspect
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def _cache_of(out):
    cache = getattr(out, "cache", None)
    return cache if cache is not None else out.past_key_values


def hf_greedy(model, prompt, n):
    """Prefill `prompt`, then n greedy tokens with HF's KV cache, one token
    per forward call. Returns (tokens, logits rows [n, vocab], seconds of
    the prefill, seconds of the n - 1 decode calls)."""
    import torch
    rows, tokens = [], []
    kwarg = _cache_kwarg(model)
    with torch.no_grad():
        t0 = time.perf_counter()
        out = model(input_ids=torch.tensor([prompt], dtype=torch.long),
                    use_cache=True)
        t1 = time.perf_counter()
        for k in range(n):
            row = out.logits[0, -1].float().numpy()
            rows.append(row)
            tok = int(np.argmax(row))  # the first index of the maximum
            tokens.append(tok)
            if k + 1 < n:
                out = model(input_ids=torch.tensor([[tok]], dtype=torch.long),
                            use_cache=True, **{kwarg: _cache_of(out)})
        t2 = time.perf_counter()
    return tokens, np.stack(rows), t1 - t0, t2 - t1


# ---------------------------------------------------------------------------
# pk's side


def compile_pk_logits(out_dir, build_dir, cxx="g++"):
    """Compiles pk_logits.cpp and links it with the build's libpk_llama.a
    (the model), libpk_llama_kernels.a (the kernels pkc compiled),
    libpk_runtime.a, and in a build with CUDA libpk_llama_cuda.a and the
    CUDA runtime. Returns (binary, where the libraries came from)."""
    exe = os.path.join(out_dir, "pk_logits")
    llama = os.path.join(build_dir, "samples", "llama")
    libs = [os.path.join(llama, "libpk_llama.a"),
            os.path.join(llama, "libpk_llama_kernels.a"),
            os.path.join(build_dir, "lib", "Runtime", "libpk_runtime.a")]
    for lib in libs:
        if not os.path.exists(lib):
            raise SystemExit(f"{lib} is missing: build pk-llama first "
                             f"(cmake --build {build_dir} --target pk-llama)")
    cuda = os.path.join(llama, "libpk_llama_cuda.a")
    if os.path.exists(cuda):
        libs[1:1] = [cuda]
        libs += ["-L/usr/local/cuda/lib64", "-lcudart"]
    cmd = [cxx, "-std=c++20", "-O2", "-fopenmp", f"-I{ROOT}/include",
           f"-I{ROOT}/samples/llama", os.path.join(HERE, "pk_logits.cpp"),
           *libs, "-o", exe]
    subprocess.run(["nice"] + cmd, check=True)
    return exe, build_dir


def pk_forced(exe, ckpt, tokens, vocab, work):
    out = os.path.join(work, "forced.f32")
    subprocess.run([exe, "forced", ckpt, out] + [str(t) for t in tokens],
                   check=True, capture_output=True, text=True)
    a = np.fromfile(out, dtype=np.float32).reshape(len(tokens) + 1, vocab)
    return a[:-1], a[-1]


def pk_greedy(exe, ckpt, prompt, n, vocab, work):
    out = os.path.join(work, "greedy.f32")
    r = subprocess.run([exe, "greedy", ckpt, out, str(n)] +
                       [str(t) for t in prompt],
                       check=True, capture_output=True, text=True)
    tokens = [int(t) for t in r.stdout.splitlines()[-1].split()]
    return tokens, np.fromfile(out, dtype=np.float32).reshape(n, vocab)


# ---------------------------------------------------------------------------
# The comparison


def top2_margin(row):
    top = np.sort(row)[-2:]
    return float(top[1] - top[0])


def rel_diff(a, b):
    """max |a - b| / max |b| (b: HF's)."""
    return float(np.abs(a - b).max() / np.abs(b).max())


def compare(name, path, exe, args, work):
    import torch
    ck = load_checkpoint(path)
    print(f"\n== {name}: {os.path.basename(path)} ({ck.describe()})")
    t0 = time.perf_counter()
    model = build_hf_model(ck)
    rng = np.random.default_rng(args.seed)
    T = min(args.tokens, ck.seq_len)
    tokens = [1] + [int(t) for t in rng.integers(3, ck.vocab_size, T - 1)]
    hf = hf_logits(model, tokens)
    t1 = time.perf_counter()
    pk_rows, pk_prefill = pk_forced(exe, path, tokens, ck.vocab_size, work)
    t2 = time.perf_counter()
    r = {"name": name, "desc": ck.describe(), "T": T,
         "max_logit": float(np.abs(hf).max()),
         "rel_tbt": rel_diff(pk_rows, hf),
         "rel_prefill": rel_diff(pk_prefill, hf[-1]),
         "rel_pk_prefill_vs_tbt": rel_diff(pk_prefill, pk_rows[-1])}
    per_pos = np.abs(pk_rows - hf).max(axis=1)
    r["worst_pos"] = int(per_pos.argmax())
    am_pk, am_hf = pk_rows.argmax(axis=1), hf.argmax(axis=1)
    differ = np.nonzero(am_pk != am_hf)[0]
    r["forced_argmax_differ"] = [
        (int(p), top2_margin(hf[p]), float(per_pos[p])) for p in differ]
    print(f"  forced, {T} tokens: max|logit| {r['max_logit']:.3f}; "
          f"max|dlogit|/max|logit|: token by token {r['rel_tbt']:.2e} "
          f"(worst at pos {r['worst_pos']}), prefill {r['rel_prefill']:.2e}; "
          f"pk prefill vs pk token by token {r['rel_pk_prefill_vs_tbt']:.2e}; "
          f"argmax differs at {len(differ)} of {T} positions"
          + (f" {r['forced_argmax_differ']}" if len(differ) else ""))
    print(f"  (HF {t1 - t0:.1f} s, pk {t2 - t1:.1f} s)")

    # greedy
    prompt = [1] + [int(t) for t in rng.integers(3, ck.vocab_size, 3)]
    n = min(args.steps, ck.seq_len - len(prompt) + 1)
    hf_tok, hf_rows, _, _ = hf_greedy(model, prompt, n)
    pk_tok, pk_rows_g = pk_greedy(exe, path, prompt, n, ck.vocab_size, work)
    r["prompt"], r["hf_greedy"], r["pk_greedy"] = prompt, hf_tok, pk_tok
    diverge = next((k for k in range(n) if hf_tok[k] != pk_tok[k]), None)
    upto = n if diverge is None else diverge + 1  # the rows both computed
    r["rel_greedy"] = rel_diff(pk_rows_g[:upto], hf_rows[:upto])
    r["greedy_margin_min"] = min(top2_margin(hf_rows[k]) for k in range(upto))
    r["diverge"] = diverge
    print(f"  greedy, prompt {prompt}, {n} steps: "
          f"{'identical' if diverge is None else f'DIVERGE at step {diverge}'}; "
          f"rel diff of the step logits {r['rel_greedy']:.2e}; "
          f"smallest HF top-2 margin {r['greedy_margin_min']:.4f}")
    print(f"    HF: {hf_tok}")
    print(f"    pk: {pk_tok}")
    if diverge is not None:
        k = diverge
        r["diverge_margin_hf"] = top2_margin(hf_rows[k])
        r["diverge_margin_pk"] = top2_margin(pk_rows_g[k])
        r["diverge_dlogit"] = float(np.abs(pk_rows_g[k] - hf_rows[k]).max())
        print(f"    at step {k}: HF top-2 margin {r['diverge_margin_hf']:.3g}, "
              f"pk's {r['diverge_margin_pk']:.3g}, max|dlogit| there "
              f"{r['diverge_dlogit']:.3g}")

    if args.controls:
        # negative controls: what the check would see with the rows left
        # unpermuted, or with HF's default epsilon (1e-6)
        bad = build_hf_model(ck, permute=False)
        r["rel_unpermuted"] = rel_diff(pk_rows, hf_logits(bad, tokens))
        other_eps = 1e-6 if ck.norm_eps != np.float32(1e-6) else 1e-5
        bad = build_hf_model(ck, eps=other_eps)
        r["rel_other_eps"] = rel_diff(pk_rows, hf_logits(bad, tokens))
        line = (f"  controls: wq/wk unpermuted {r['rel_unpermuted']:.2e}, "
                f"rms_norm_eps {other_eps:g} {r['rel_other_eps']:.2e}")
        if ck.qkv_bias:
            bad = build_hf_model(ck, biases=False)
            r["rel_no_bias"] = rel_diff(pk_rows, hf_logits(bad, tokens))
            bad = build_hf_model(ck, theta=10000.0)
            r["rel_theta1e4"] = rel_diff(pk_rows, hf_logits(bad, tokens))
            line += (f", biases zeroed {r['rel_no_bias']:.2e}, rope_theta "
                     f"1e4 {r['rel_theta1e4']:.2e}")
        del bad
        print(line)
    r["ok"] = (max(r["rel_tbt"], r["rel_prefill"], r["rel_greedy"])
               <= args.tolerance and diverge is None)
    return r


DEFAULT_MODELS = [
    # name, pk-llama-checkpoint arguments
    ("tiny (GQA)", ["--preset", "tiny", "--version", "0"]),
    ("MHA small, unshared, v1",
     ["--dim", "64", "--hidden-dim", "172", "--layers", "2", "--heads", "4",
      "--kv-heads", "4", "--vocab", "512", "--seq-len", "128", "--unshared",
      "--version", "1", "--seed", "7"]),
    ("stories15M", ["--preset", "stories15M", "--version", "0"]),
    ("qwen2-tiny (Qwen2)", ["--preset", "qwen2-tiny", "--version", "1"]),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", action="append", default=[],
                    help="compare this llama2.c checkpoint (version 0 or 1) "
                         "instead of the default random ones; repeatable")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"),
                    help="the build with pk-llama-checkpoint, libpk_llama.a "
                         "and libpk_runtime.a")
    ap.add_argument("--make-checkpoint",
                    help="pk-llama-checkpoint, for the default models "
                         "(default: the build's)")
    ap.add_argument("--pk-logits", help="a pk_logits binary already built")
    ap.add_argument("--work", help="work directory (default: a temporary one)")
    ap.add_argument("--tokens", type=int, default=128,
                    help="length of the forced sequence (capped at seq_len)")
    ap.add_argument("--steps", type=int, default=32, help="greedy tokens")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tolerance", type=float, default=1e-4)
    ap.add_argument("--threads", type=int, default=2,
                    help="torch and OpenMP threads")
    ap.add_argument("--controls", action="store_true",
                    help="also report unpermuted wq/wk and eps 1e-6")
    args = ap.parse_args()

    import torch
    import transformers
    torch.set_num_threads(args.threads)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, "
          f"numpy {np.__version__}, {args.threads} threads")

    work = args.work or tempfile.mkdtemp(prefix="pk-hf-compare-")
    os.makedirs(work, exist_ok=True)
    try:
        print("RoPE: llama2.c interleaved vs HF rotate_half with the row "
              "permutation (transformers' own rotary code):")
        check_rope_permutation()
        if args.pk_logits:
            exe, src = args.pk_logits, "given"
        else:
            exe, src = compile_pk_logits(work, args.build_dir)
        print(f"pk_logits: {exe} (libraries of {src})")
        make_checkpoint = args.make_checkpoint or os.path.join(
            args.build_dir, "samples", "llama", "pk-llama-checkpoint")
        models = []
        if args.checkpoint:
            models = [(os.path.basename(p), p) for p in args.checkpoint]
        else:
            for i, (name, flags) in enumerate(DEFAULT_MODELS):
                path = os.path.join(work, f"model{i}.bin")
                subprocess.run(["nice", make_checkpoint, "--out", path]
                               + flags, check=True, capture_output=True)
                models.append((name, path))
        results = [compare(name, path, exe, args, work)
                   for name, path in models]
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)

    print(f"\n| model | T | max abs logit | rel tbt | rel prefill | "
          f"rel greedy | greedy {args.steps} | min top-2 margin | ok |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        g = "identical" if r["diverge"] is None else \
            f"diverge @{r['diverge']} (margin {r['diverge_margin_hf']:.3g})"
        print(f"| {r['name']} | {r['T']} | {r['max_logit']:.2f} | "
              f"{r['rel_tbt']:.1e} | {r['rel_prefill']:.1e} | "
              f"{r['rel_greedy']:.1e} | {g} | {r['greedy_margin_min']:.3f} | "
              f"{'yes' if r['ok'] else 'NO'} |")
    ok = all(r["ok"] for r in results)
    print(f"\n{'PASS' if ok else 'FAIL'}: max|dlogit| <= {args.tolerance:g} "
          "* max|logit| and identical greedy tokens"
          + ("" if ok else " not met"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
