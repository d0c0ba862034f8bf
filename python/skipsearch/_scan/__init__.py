"""The stages of the checkpoint scan (:func:`skipsearch.scan`).

1. :mod:`~skipsearch._scan.locate` finds a checkpoint's FFN blocks and
   checks their tensor names, shapes, dtypes and quantization from the
   headers and ``config.json``, without reading a weight.
2. :mod:`~skipsearch._scan.tensors` reads one block's tensors, one tensor at
   a time, widened and dequantized, and recognises tied blocks.
3. :mod:`~skipsearch._scan.decide` decides one block (a module-level
   function, so that process and cluster executors can ship it).
4. :mod:`~skipsearch._scan.report` turns a decision into a report row.

:mod:`skipsearch.scan` runs them in turn, one block at a time.
"""
