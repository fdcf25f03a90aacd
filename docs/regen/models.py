"""docs/transformers.md's table of the zoo transformers: parameters and forward MACs as `dtsim models`
counts them (the definitions are words, copied)."""
import csv
import io

from .engine import block
from .runs import table

DEFINITIONS = [
    ("vit_b_16", "torchvision.models.vit_b_16, 224 x 224: 196 patches + class token = 197 tokens", ""),
    ("gpt2_small", "HuggingFace GPT2LMHeadModel, gpt2 configuration: 12 x 768, 12 heads, MLP 3072 (tanh GELU), pre-LayerNorm, "
     "vocabulary 50257, 1024 learned positions, lm_head tied to wte", " at T = 1024"),
    ("gpt2_medium", "the same module, gpt2-medium configuration: 24 x 1024, 16 heads, MLP 4096", " at T = 1024"),
    ("gpt2_large", "the same module, gpt2-large configuration: 36 x 1280, 20 heads, MLP 5120", " at T = 1024"),
    ("gpt2_xl", "the same module, gpt2-xl configuration: 48 x 1600, 25 heads, MLP 6400", " at T = 1024"),
    ("llama2_7b", "HuggingFace LlamaForCausalLM, meta-llama/Llama-2-7b-hf configuration: 32 x 4096, 32 heads, SwiGLU MLP 11008, "
     "RMSNorm (priced as a LayerNorm without bias), rotary positions (not priced), vocabulary 32000, untied lm_head", " at T = 4096"),
    ("llama3_8b", "the same module, meta-llama/Meta-Llama-3-8B configuration: 32 x 4096, 32 heads with 8 key/value heads "
     "(grouped-query attention), SwiGLU MLP 14336, vocabulary 128256, untied lm_head", " at T = 2048 (8192 exceeds dtsim's per-layer bound)"),
    ("bert_base", "HuggingFace BertForMaskedLM, bert-base-uncased configuration: 12 x 768, 12 heads, 3072 (GELU), post-LayerNorm, "
     "30522 words, 512 positions, 2 token types; masked-LM head with the decoder tied to the word embeddings", " at T = 512"),
]


@block("transformers-models")
def transformers_models(ctx):
    rows = {r["model"]: r for r in csv.DictReader(io.StringIO(ctx.run(["dtsim", "models", "--format", "csv"])))}
    body = []
    for name, words, at in DEFINITIONS:
        macs = int(rows[name]["fwd MACs/sample"])
        flops = f" ({2 * macs / 1e9:.1f} GFLOPs)" if not at else ""
        body.append([f"`{name}`", words, f"{int(rows[name]['params']):,}", f"{macs / 1e9:.2f} GMACs{flops}{at}" if not at
                     else f"{macs / 1e9:.1f} GMACs{at}"])
    return table(["zoo name", "definition", "parameters", "forward per sample"], body)
