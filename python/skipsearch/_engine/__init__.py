"""The stages of the exact subset-sum engine behind
:func:`skipsearch.subset_sum` (the Rust core does the searching; these
modules prepare, order and check its work):

- ``integers``: reading the input as exact int64, or refusing it;
- ``presolve``: the feasibility jump's budget, fixing variables by row
  bounds and gcds, the independent components;
- ``components``: one component: Schroeppel-Shamir when small, else the
  lattice (after a float heuristic when its reduction is predicted slow);
- ``floats``: the float-data path (relaxation, branch and bound, meeting
  in the middle) and the float heuristic of the integer path;
- ``lattice``: one component's lattice search, from the embedding to the
  portfolio;
- ``embedding``: the embedding, its kernel basis, and the decoding of
  kernel vectors into solutions;
- ``reduction``: LLL and BKZ, by fpylll (the ``lattice`` extra) or the
  core's LLL;
- ``integer_algebra``: exact rank and leading minors of integer matrices;
- ``kernel_search``: the enumerations of one kernel lattice, with their
  shared limits and counters;
- ``portfolio``: limited-discrepancy restarts on re-randomised bases,
  taking turns with the complete depth-first search;
- ``distributed``: the same portfolio as units on an executor (dask, a
  process pool, or this thread), resumable: the coordinator;
- ``tasks``: those units, plain functions any worker can run;
- ``state``: the state file of a resumable search;
- ``cluster``: the distributed search's options, checked once;
- ``instances``: the instance files (QOBLIB ``.dat``, ``.npz``, ``.json``)
  and QOBLIB's solution format.
"""
