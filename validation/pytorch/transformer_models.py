#!/usr/bin/env python3
"""GPT-2 small and BERT-base in plain PyTorch, for dtsim's reference runs and ONNX exports.

The machines that run the references have PyTorch and torchvision but not HuggingFace transformers,
so the two language models are written here, layer for layer as dtsim's zoo describes them
(configs/models/gen_zoo.py gpt2_small and bert_base) and with the parameter counts of HuggingFace's
GPT2LMHeadModel (124,439,808) and BertForMaskedLM (109,514,298), checked by `python3 -m
validation.pytorch.transformer_models` or by running this file.

Where they differ from HuggingFace's code (the kernels a step runs, not the maths):
- nn.Linear instead of GPT-2's Conv1D (weight stored transposed): the same GEMM with the other operand
  transposed, and the same bias epilogue.
- The loss of GPT-2 runs over every token against targets shifted in the data (as nanoGPT trains it),
  so there is no shift-and-copy of the logits before the loss; the zoo prices B x T rows of loss.
- Attention is torch.nn.functional.scaled_dot_product_attention (HuggingFace's "sdpa" attention, its
  default), with dropout 0.1 inside it in training; BERT without padding (all tokens valid), so no
  mask, as HuggingFace passes none when the mask is all ones. With `explicit_attention=True` it is
  written out (MatMul, scale, causal mask, Softmax, dropout, MatMul), HuggingFace's "eager" attention,
  which is what an ONNX export of either contains and what older PyTorch without sdpa can run.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

GPT2 = dict(vocab=50257, positions=1024, width=768, heads=12, layers=12, mlp=3072, dropout=0.1, eps=1e-5)
BERT = dict(vocab=30522, positions=512, token_types=2, width=768, heads=12, layers=12, mlp=3072, dropout=0.1,
            eps=1e-12)


def attention(q, k, v, causal, dropout_p, explicit):
    """q, k, v: B x heads x T x head_dim."""
    if not explicit and hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=causal)
    s = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    if causal:
        t = q.size(-2)
        keep = torch.ones(t, t, dtype=torch.bool, device=q.device).tril()
        s = s.masked_fill(~keep, float("-inf"))
    p = F.dropout(torch.softmax(s, dim=-1), dropout_p)
    return torch.matmul(p, v)


class SelfAttention(nn.Module):
    def __init__(self, c, heads, dropout, causal, fused_qkv, explicit):
        super().__init__()
        self.heads, self.causal, self.dropout, self.explicit = heads, causal, dropout, explicit
        if fused_qkv:  # GPT-2's c_attn: q, k and v from one GEMM
            self.c_attn = nn.Linear(c, 3 * c)
        else:          # BERT's query, key, value
            self.query, self.key, self.value = nn.Linear(c, c), nn.Linear(c, c), nn.Linear(c, c)
        self.fused = fused_qkv

    def forward(self, x):
        b, t, c = x.shape
        if self.fused:
            q, k, v = self.c_attn(x).split(c, dim=2)
        else:
            q, k, v = self.query(x), self.key(x), self.value(x)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = attention(q, k, v, self.causal, self.dropout if self.training else 0.0, self.explicit)
        return y.transpose(1, 2).reshape(b, t, c)


class Gpt2Block(nn.Module):
    def __init__(self, cfg, explicit):
        super().__init__()
        c = cfg["width"]
        self.ln_1 = nn.LayerNorm(c, eps=cfg["eps"])
        self.attn = SelfAttention(c, cfg["heads"], cfg["dropout"], True, True, explicit)
        self.attn_c_proj = nn.Linear(c, c)
        self.resid_dropout = nn.Dropout(cfg["dropout"])
        self.ln_2 = nn.LayerNorm(c, eps=cfg["eps"])
        self.c_fc = nn.Linear(c, cfg["mlp"])
        self.c_proj = nn.Linear(cfg["mlp"], c)
        self.mlp_dropout = nn.Dropout(cfg["dropout"])

    def forward(self, x):
        x = x + self.resid_dropout(self.attn_c_proj(self.attn(self.ln_1(x))))
        return x + self.mlp_dropout(self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh")))


class Gpt2(nn.Module):
    """GPT2LMHeadModel (gpt2 configuration) in its parameter order: wte, wpe, the blocks, ln_f; lm_head
    is wte's weight."""

    def __init__(self, explicit_attention=False, cfg=GPT2):
        super().__init__()
        self.wte = nn.Embedding(cfg["vocab"], cfg["width"])
        self.wpe = nn.Embedding(cfg["positions"], cfg["width"])
        self.drop = nn.Dropout(cfg["dropout"])
        self.h = nn.ModuleList(Gpt2Block(cfg, explicit_attention) for _ in range(cfg["layers"]))
        self.ln_f = nn.LayerNorm(cfg["width"], eps=cfg["eps"])
        self.lm_head = nn.Linear(cfg["width"], cfg["vocab"], bias=False)
        self.lm_head.weight = self.wte.weight
        self.vocab = cfg["vocab"]

    def forward(self, ids):
        pos = torch.arange(ids.size(1), device=ids.device)
        x = self.drop(self.wte(ids) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


class BertLayer(nn.Module):
    def __init__(self, cfg, explicit):
        super().__init__()
        c = cfg["width"]
        self.attention = SelfAttention(c, cfg["heads"], cfg["dropout"], False, False, explicit)
        self.attention_output = nn.Linear(c, c)
        self.attention_dropout = nn.Dropout(cfg["dropout"])
        self.attention_norm = nn.LayerNorm(c, eps=cfg["eps"])
        self.intermediate = nn.Linear(c, cfg["mlp"])
        self.output = nn.Linear(cfg["mlp"], c)
        self.output_dropout = nn.Dropout(cfg["dropout"])
        self.output_norm = nn.LayerNorm(c, eps=cfg["eps"])

    def forward(self, x):  # post-LayerNorm
        x = self.attention_norm(x + self.attention_dropout(self.attention_output(self.attention(x))))
        return self.output_norm(x + self.output_dropout(self.output(F.gelu(self.intermediate(x)))))


class Bert(nn.Module):
    """BertForMaskedLM (bert-base-uncased configuration): embeddings (word, position, token type,
    LayerNorm), 12 layers, the MLM head (dense, GELU, LayerNorm, decoder tied to the word embeddings
    with its own bias). No pooler. Token-type ids are all zero (one segment)."""

    def __init__(self, explicit_attention=False, cfg=BERT):
        super().__init__()
        c = cfg["width"]
        self.word_embeddings = nn.Embedding(cfg["vocab"], c)
        self.position_embeddings = nn.Embedding(cfg["positions"], c)
        self.token_type_embeddings = nn.Embedding(cfg["token_types"], c)
        self.embeddings_norm = nn.LayerNorm(c, eps=cfg["eps"])
        self.embeddings_dropout = nn.Dropout(cfg["dropout"])
        self.layer = nn.ModuleList(BertLayer(cfg, explicit_attention) for _ in range(cfg["layers"]))
        self.transform = nn.Linear(c, c)
        self.transform_norm = nn.LayerNorm(c, eps=cfg["eps"])
        self.decoder = nn.Linear(c, cfg["vocab"])
        self.decoder.weight = self.word_embeddings.weight
        self.vocab = cfg["vocab"]

    def forward(self, ids):
        pos = torch.arange(ids.size(1), device=ids.device)
        x = self.word_embeddings(ids) + self.position_embeddings(pos) + self.token_type_embeddings(torch.zeros_like(ids))
        x = self.embeddings_dropout(self.embeddings_norm(x))
        for layer in self.layer:
            x = layer(x)
        return self.decoder(self.transform_norm(F.gelu(self.transform(x))))


def init_weights(model):
    """HuggingFace's initialisation of both (initializer_range 0.02): normal(0, 0.02) weights, zero
    biases, LayerNorm ones and zeros. With PyTorch's N(0, 1) embeddings the tied output layer starts
    with logits in the hundreds."""
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, 0.0, 0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)
    return model


LANGUAGE_MODELS = {"gpt2_small": (Gpt2, GPT2), "bert_base": (Bert, BERT)}
PARAMETERS = {"gpt2_small": 124439808, "bert_base": 109514298}


def build(name, explicit_attention=False):
    return init_weights(LANGUAGE_MODELS[name][0](explicit_attention=explicit_attention))


def context(name):
    return LANGUAGE_MODELS[name][1]["positions"]


def vocabulary(name):
    return LANGUAGE_MODELS[name][1]["vocab"]


if __name__ == "__main__":
    for name, want in PARAMETERS.items():
        got = sum(p.numel() for p in build(name).parameters())
        print(f"{name}: {got:,} parameters ({'ok' if got == want else 'expected %d' % want})")
        assert got == want
