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
