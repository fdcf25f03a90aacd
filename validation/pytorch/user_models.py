#!/usr/bin/env python3
"""The models users bring, built as their libraries build them: HuggingFace transformers classes from
a config with random weights, timm and torchvision models without pretrained weights.

Each entry names its family, the library call that builds it, its input (token ids of a fixed length
T, or 224 x 224 images), the batches it is measured at, the optimizer its users train it with, and
whether the model computes its own loss (HuggingFace's `labels=`) or the training loop does
(torch.nn.functional.cross_entropy on the logits, as timm and torchvision users write it).

`split` is fixed here, before anything is measured or fitted: "fit" models may tune dtsim's eager
lowering and host costs; "held_out" models are only predicted. Families have members on both sides
where they have two members; where a family has one member it is held out (it is what a user's new
model of that family looks like to dtsim).

    python3 validation/pytorch/user_models.py          # lists the entries and their parameter counts
"""
import torch

# Token lengths: the models' usual training context, capped at 1024 (what fits two batches on one GPU).
T_DECODER = 1024
T_ENCODER = 512

# name: family, source, builder arguments, input, batches, optimizer, split
MODELS = {
    # --- HuggingFace transformers (AutoConfig-style configs, random weights) ---
    "hf_gpt2": dict(family="gpt2", source="hf", cls="GPT2LMHeadModel", config="GPT2Config", kw={},
                    task="causal_lm", T=T_DECODER, batches=(8, 16), optimizer="adamw", split="fit"),
    "hf_gpt2_medium": dict(family="gpt2", source="hf", cls="GPT2LMHeadModel", config="GPT2Config",
                           kw=dict(n_embd=1024, n_layer=24, n_head=16), task="causal_lm", T=T_DECODER,
                           batches=(4, 8), optimizer="adamw", split="held_out"),
    "hf_distilgpt2": dict(family="gpt2", source="hf", cls="GPT2LMHeadModel", config="GPT2Config",
                          kw=dict(n_layer=6), task="causal_lm", T=T_DECODER, batches=(8, 16),
                          optimizer="adamw", split="fit"),
    "hf_bert_base": dict(family="bert", source="hf", cls="BertForMaskedLM", config="BertConfig", kw={},
                         task="masked_lm", T=T_ENCODER, batches=(16, 32), optimizer="adamw", split="fit"),
    "hf_roberta_base": dict(family="roberta", source="hf", cls="RobertaForMaskedLM", config="RobertaConfig",
                            kw=dict(vocab_size=50265, max_position_embeddings=514, type_vocab_size=1,
                                    pad_token_id=1, bos_token_id=0, eos_token_id=2),
                            task="masked_lm", T=T_ENCODER, batches=(16, 32), optimizer="adamw", split="held_out"),
    "hf_distilbert": dict(family="distilbert", source="hf", cls="DistilBertForMaskedLM",
                          config="DistilBertConfig", kw={}, task="masked_lm", T=T_ENCODER, batches=(16, 32),
                          optimizer="adamw", split="fit"),
    "hf_opt_125m": dict(family="opt", source="hf", cls="OPTForCausalLM", config="OPTConfig",
                        kw=dict(hidden_size=768, num_hidden_layers=12, ffn_dim=3072, num_attention_heads=12,
                                word_embed_proj_dim=768, vocab_size=50272, max_position_embeddings=2048),
                        task="causal_lm", T=T_DECODER, batches=(8, 16), optimizer="adamw", split="fit"),
    "hf_opt_350m": dict(family="opt", source="hf", cls="OPTForCausalLM", config="OPTConfig",
                        kw=dict(hidden_size=1024, num_hidden_layers=24, ffn_dim=4096, num_attention_heads=16,
                                word_embed_proj_dim=512, vocab_size=50272, max_position_embeddings=2048,
                                do_layer_norm_before=False),
                        task="causal_lm", T=T_DECODER, batches=(4, 8), optimizer="adamw", split="held_out"),
    "hf_llama_small": dict(family="llama", source="hf", cls="LlamaForCausalLM", config="LlamaConfig",
                           kw=dict(hidden_size=1024, intermediate_size=2816, num_hidden_layers=16,
                                   num_attention_heads=16, num_key_value_heads=16, vocab_size=32000,
                                   max_position_embeddings=2048, tie_word_embeddings=False),
                           task="causal_lm", T=T_DECODER, batches=(4, 8), optimizer="adamw", split="fit"),
    "hf_llama_gqa": dict(family="llama", source="hf", cls="LlamaForCausalLM", config="LlamaConfig",
                         kw=dict(hidden_size=1536, intermediate_size=4096, num_hidden_layers=12,
                                 num_attention_heads=12, num_key_value_heads=4, vocab_size=32000,
                                 max_position_embeddings=2048, tie_word_embeddings=False),
                         task="causal_lm", T=T_DECODER, batches=(4, 8), optimizer="adamw", split="held_out"),
    "hf_qwen2_small": dict(family="qwen2", source="hf", cls="Qwen2ForCausalLM", config="Qwen2Config",
                           kw=dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=12,
                                   num_attention_heads=14, num_key_value_heads=2, vocab_size=151936,
                                   max_position_embeddings=2048, tie_word_embeddings=True),
                           task="causal_lm", T=T_DECODER, batches=(4, 8), optimizer="adamw", split="fit"),
    "hf_mistral_small": dict(family="mistral", source="hf", cls="MistralForCausalLM", config="MistralConfig",
                             kw=dict(hidden_size=1024, intermediate_size=3584, num_hidden_layers=12,
                                     num_attention_heads=16, num_key_value_heads=8, vocab_size=32000,
                                     max_position_embeddings=2048, sliding_window=None,
                                     tie_word_embeddings=False),
                             task="causal_lm", T=T_DECODER, batches=(4, 8), optimizer="adamw", split="held_out"),
    "hf_vit_base": dict(family="hf_vit", source="hf", cls="ViTForImageClassification", config="ViTConfig",
                        kw=dict(num_labels=1000), task="image_cls_labels", batches=(32, 64),
                        optimizer="adamw", split="held_out"),
    # --- timm ---
    "timm_convnext_tiny": dict(family="convnext", source="timm", name="convnext_tiny", task="image_cls",
                               batches=(32, 64), optimizer="adamw", split="fit"),
    "timm_swin_tiny": dict(family="swin", source="timm", name="swin_tiny_patch4_window7_224", task="image_cls",
                           batches=(32, 64), optimizer="adamw", split="held_out"),
    "timm_regnety_016": dict(family="regnet", source="timm", name="regnety_016", task="image_cls",
                             batches=(32, 64), optimizer="sgd", split="fit"),
    "timm_efficientnet_b0": dict(family="efficientnet", source="timm", name="efficientnet_b0", task="image_cls",
                                 batches=(32, 64), optimizer="sgd", split="held_out"),
    "timm_mobilenetv3_large": dict(family="mobilenetv3", source="timm", name="mobilenetv3_large_100",
                                   task="image_cls", batches=(32, 128), optimizer="sgd", split="fit"),
    "timm_deit_small": dict(family="vit", source="timm", name="deit_small_patch16_224", task="image_cls",
                            batches=(64, 128), optimizer="adamw", split="fit"),
    "timm_seresnext26d": dict(family="resnext", source="timm", name="seresnext26d_32x4d", task="image_cls",
                              batches=(32, 64), optimizer="sgd", split="held_out"),
    # --- torchvision ---
    "tv_convnext_tiny": dict(family="convnext", source="torchvision", name="convnext_tiny", task="image_cls",
                             batches=(32, 64), optimizer="adamw", split="held_out"),
    "tv_swin_t": dict(family="swin", source="torchvision", name="swin_t", task="image_cls", batches=(32, 64),
                      optimizer="adamw", split="fit"),
    "tv_regnet_y_800mf": dict(family="regnet", source="torchvision", name="regnet_y_800mf", task="image_cls",
                              batches=(32, 64), optimizer="sgd", split="held_out"),
    "tv_efficientnet_b0": dict(family="efficientnet", source="torchvision", name="efficientnet_b0",
                               task="image_cls", batches=(32, 64), optimizer="sgd", split="fit"),
    "tv_mobilenet_v3_large": dict(family="mobilenetv3", source="torchvision", name="mobilenet_v3_large",
                                  task="image_cls", batches=(32, 128), optimizer="sgd", split="held_out"),
    "tv_resnext50_32x4d": dict(family="resnext", source="torchvision", name="resnext50_32x4d", task="image_cls",
                               batches=(32, 64), optimizer="sgd", split="fit"),
    "tv_shufflenet_v2": dict(family="shufflenet", source="torchvision", name="shufflenet_v2_x1_0",
                             task="image_cls", batches=(64, 128), optimizer="sgd", split="held_out"),
    "tv_googlenet": dict(family="inception", source="torchvision", name="googlenet", task="image_cls",
                         batches=(32, 64), optimizer="sgd", split="fit"),
    "tv_vit_b_16": dict(family="vit", source="torchvision", name="vit_b_16", task="image_cls", batches=(32, 64),
                        optimizer="adamw", split="held_out"),
    # --- models dtsim's zoo describes layer for layer (`zoo`: the zoo model that prices them), for the
    # checkpointing and accumulation runs: there the step's base price is the zoo's, so what a run checks
    # is the mode. The plain GPT-2 and BERT are validation/pytorch/transformer_models.py's. ---
    "tv_resnet50": dict(family="resnet", source="torchvision", name="resnet50", zoo="resnet50", task="image_cls",
                        batches=(64, 128), optimizer="sgd", split="held_out"),
    "plain_gpt2": dict(family="gpt2", source="plain", name="gpt2_small", zoo="gpt2_small", task="plain_lm",
                       T=1024, batches=(8, 16), optimizer="adamw", split="fit"),
    "plain_bert": dict(family="bert", source="plain", name="bert_base", zoo="bert_base", task="plain_lm",
                       T=T_ENCODER, batches=(16, 32), optimizer="adamw", split="held_out"),
}


def build(name):
    """The module as its library builds it, in train(), on the CPU, fp32."""
    e = MODELS[name]
    torch.manual_seed(0)
    if e["source"] == "hf":
        import transformers
        cfg = getattr(transformers, e["config"])(**e["kw"])
        model = getattr(transformers, e["cls"])(cfg)
    elif e["source"] == "plain":
        import transformer_models as tm
        model = tm.build(e["name"])
    elif e["source"] == "timm":
        import timm
        model = timm.create_model(e["name"], pretrained=False, num_classes=1000)
    else:
        import torchvision
        kw = {"aux_logits": False, "init_weights": False} if e["name"] in ("googlenet", "inception_v3") else {}
        model = getattr(torchvision.models, e["name"])(weights=None, num_classes=1000, **kw)
    model.train()
    return model


def is_language(name):
    return MODELS[name]["task"] in ("causal_lm", "masked_lm", "plain_lm")


def vocabulary(model):
    return model.config.vocab_size if hasattr(model, "config") else model.vocab


def parameters(model):
    """Parameters as the framework counts them: model.parameters() yields a tied tensor once."""
    return sum(p.numel() for p in model.parameters())


class Step(torch.nn.Module):
    """What one training step calls: the model and its loss, as its users write it. A HuggingFace
    model takes labels and computes its own loss (a causal LM shifts the logits inside); timm and
    torchvision models return logits and the loop applies cross_entropy. The ONNX exports are of
    this module, so the loss is in the graph as the step computes it. Language models take
    (input_ids, attention_mask, labels), image models (images, labels)."""

    def __init__(self, name, model):
        super().__init__()
        self.model, self.task = model, MODELS[name]["task"]

    def forward(self, x, a, b=None):
        if self.task in ("causal_lm", "masked_lm"):
            return self.model(input_ids=x, attention_mask=a, labels=b).loss
        if self.task == "plain_lm":  # the zoo's loss: every token against its own id, no shift
            logits = self.model(x)
            return torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), b.view(-1))
        if self.task == "image_cls_labels":
            return self.model(pixel_values=x, labels=a).loss
        return torch.nn.functional.cross_entropy(self.model(x), a)


def step_args(name, x, mask, y):
    """The Step module's positional arguments for one batch."""
    return (x, mask, y) if is_language(name) else (x, y)


def inputs(name, model, batch, device, seed=1):
    """(x, attention_mask, labels) of one batch: token ids with an all-ones attention mask (as a
    tokenizer gives for unpadded sequences) and the ids as labels, or images and class labels."""
    g = torch.Generator().manual_seed(seed)
    e = MODELS[name]
    if is_language(name):
        v = vocabulary(model)
        ids = torch.randint(0, v, (batch, e["T"]), generator=g)
        return ids.to(device), torch.ones(batch, e["T"], dtype=torch.int64, device=device), ids.to(device)
    x = torch.randn(batch, 3, 224, 224, generator=g)
    y = torch.randint(0, 1000, (batch,), generator=g)
    return x.to(device), None, y.to(device)


if __name__ == "__main__":
    for n, e in MODELS.items():
        try:
            m = build(n)
            print(f"{n:24s} {e['family']:12s} {e['split']:9s} {parameters(m):>12,d}")
        except Exception as ex:  # noqa: BLE001  (a listing; say what failed and go on)
            print(f"{n:24s} failed: {type(ex).__name__}: {ex}")
