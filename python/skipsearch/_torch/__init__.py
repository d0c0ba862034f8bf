"""The stages of :func:`skipsearch.from_torch`.

1. :mod:`~skipsearch._torch.modules` matches a module to an MLP layout
   (a Sequential, or the attribute names of a Hugging Face MLP).
2. :mod:`~skipsearch._torch.tensors` copies each layer's weight and bias to
   numpy, widening bfloat16/float8, dequantizing FP8 with its scales and
   refusing every other quantized format.
3. :mod:`~skipsearch._torch.activations` names the activation module (or
   checks a user-given one).

torch and transformers are never imported here: everything is duck-typed.
"""
