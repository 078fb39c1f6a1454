"""Published model shapes the formula families draw from (their config files or papers).

Attention shapes are those of each model's Hugging Face ``config.json``
(``num_hidden_layers``, ``num_attention_heads``, ``num_key_value_heads``, ``head_dim`` or
``hidden_size / num_attention_heads``, ``max_position_embeddings``, ``vocab_size``).
"""

from __future__ import annotations

from typing import Final, NamedTuple


class Decoder(NamedTuple):
    name: str
    layers: int
    q_heads: int
    kv_heads: int
    head_dim: int
    hidden: int
    vocab: int
    context: int  # the longest sequence it was published for
    params_b: float  # parameters, billions


DECODERS: Final = (
    Decoder("Llama-2-7B", 32, 32, 32, 128, 4096, 32000, 4096, 6.74),
    Decoder("Llama-2-13B", 40, 40, 40, 128, 5120, 32000, 4096, 13.0),
    Decoder("Llama-2-70B", 80, 64, 8, 128, 8192, 32000, 4096, 69.0),
    Decoder("Llama-3.1-8B", 32, 32, 8, 128, 4096, 128256, 131072, 8.03),
    Decoder("Llama-3.1-70B", 80, 64, 8, 128, 8192, 128256, 131072, 70.6),
    Decoder("Llama-3.1-405B", 126, 128, 8, 128, 16384, 128256, 131072, 406.0),
    Decoder("Llama-3.2-1B", 16, 32, 8, 64, 2048, 128256, 131072, 1.24),
    Decoder("Llama-3.2-3B", 28, 24, 8, 128, 3072, 128256, 131072, 3.21),
    Decoder("Mistral-7B-v0.3", 32, 32, 8, 128, 4096, 32768, 32768, 7.25),
    Decoder("Mistral-Nemo-12B", 40, 32, 8, 128, 5120, 131072, 131072, 12.2),
    Decoder("Qwen2.5-7B", 28, 28, 4, 128, 3584, 152064, 32768, 7.62),
    Decoder("Qwen2.5-14B", 48, 40, 8, 128, 5120, 152064, 32768, 14.8),
    Decoder("Qwen2.5-32B", 64, 40, 8, 128, 5120, 152064, 32768, 32.8),
    Decoder("Qwen2.5-72B", 80, 64, 8, 128, 8192, 152064, 32768, 72.7),
    Decoder("Gemma-2-2B", 26, 8, 4, 256, 2304, 256000, 8192, 2.61),
    Decoder("Gemma-2-9B", 42, 16, 8, 256, 3584, 256000, 8192, 9.24),
    Decoder("Gemma-2-27B", 46, 32, 16, 128, 4608, 256000, 8192, 27.2),
    Decoder("Phi-3-mini", 32, 32, 32, 96, 3072, 32064, 4096, 3.82),
    Decoder("Falcon-7B", 32, 71, 1, 64, 4544, 65024, 2048, 7.22),
    Decoder("Yi-34B", 60, 56, 8, 128, 7168, 64000, 4096, 34.4),
)


def decoder(name: str) -> Decoder:
    return next(d for d in DECODERS if d.name == name)


# GPU memory sizes an engineer meets, in GB (10^9 bytes) as vendors state them: T4 16,
# A10 24, L4 24, A100 40/80, L40S 48, H100 80, H200 141, B200 192.
GPU_GB: Final = (16, 24, 40, 48, 80, 141, 192)
LARGEST_GPU_BYTES: Final = 192 * 10**9
