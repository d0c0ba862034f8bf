"""The families the scan knows, by kind: each module holds a ``FAMILIES``
dict of ``model_type`` -> :class:`skipsearch.io.layouts.Family`, merged into
:data:`skipsearch.io.layouts.FAMILIES`.

- :mod:`~skipsearch.io._families.decoders`: decoders whose MLP is not gated.
- :mod:`~skipsearch.io._families.encoders`: encoders and encoder-decoders.
- :mod:`~skipsearch.io._families.towers`: text and vision towers (CLIP,
  SigLIP) and multimodal models with their language models.
- :mod:`~skipsearch.io._families.gated`: dense gated decoders.
- :mod:`~skipsearch.io._families.moe`: mixture-of-experts models.

Every tensor name and config key is taken from the model's own definition
in Hugging Face transformers and from public checkpoints; each entry says
where.
"""
