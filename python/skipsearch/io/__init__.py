"""Reading checkpoints: what a scan needs before any decision.

- :mod:`skipsearch.io.checkpoints`: safetensors files, sharded indexes,
  PyTorch ``.bin`` files and the Hugging Face cache, read tensor by tensor;
- :mod:`skipsearch.io.gguf`: GGUF files (llama.cpp), with the ``gguf``
  extra;
- :mod:`skipsearch.io.quantization`: dequantizing stored integer weights
  (bitsandbytes, GPTQ, AWQ, compressed-tensors, GGUF blocks) to float64;
- :mod:`skipsearch.io.layouts`: where each model family keeps its FFN
  tensors and which config keys give the activation and norm, with the
  families themselves in ``skipsearch.io._families``.
"""
