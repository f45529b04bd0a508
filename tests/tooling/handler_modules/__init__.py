"""Handler modules a deployment could name in ``WINK_HANDLER_MODULES``, good
and bad, for ``tests/tooling/test_handler_modules.py``."""
