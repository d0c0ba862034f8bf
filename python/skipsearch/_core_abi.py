"""The interface revision of the compiled core that these Python files expect.

Bump ``CORE_ABI`` together with ``CORE_ABI`` in ``rust/python/mod.rs`` whenever a
binding's arguments or returned fields change: ``skipsearch/__init__.py``
refuses to import a core whose ``__abi__`` differs (a stale build), instead
of failing later with an ``AttributeError`` or a wrong result.
"""

#: Must equal ``CORE_ABI`` in ``rust/python/mod.rs`` (exposed as ``skipsearch._core.__abi__``).
CORE_ABI = 12
