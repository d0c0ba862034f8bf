"""The stages of the checkpoint scan (:func:`skipsearch.scan`).

1. :mod:`~skipsearch._scan.locate` finds a checkpoint's FFN blocks (every
   part of its family: dense MLPs, experts, shared experts, stacks and
   towers) and checks their tensor names, shapes, dtypes, layer and expert
   counts and quantization from the headers and ``config.json``, without
   reading a weight. A repo id is first found in the Hugging Face cache
   (:mod:`~skipsearch._scan.hub`), and a ``model_type`` the registry lacks
   gets the automatic layout (:mod:`~skipsearch._scan.auto`).
2. :mod:`~skipsearch._scan.tensors` reads one block's tensors, one tensor at
   a time, widened and dequantized, and recognises tied blocks.
3. :mod:`~skipsearch._scan.decide` decides one block (a module-level
   function, so that process and cluster executors can ship it).
4. :mod:`~skipsearch._scan.report` turns a decision into a report row;
   :mod:`~skipsearch._scan.frames` turns the rows into one DataFrame.

:mod:`skipsearch.scan` runs them in turn, one block at a time.
"""
