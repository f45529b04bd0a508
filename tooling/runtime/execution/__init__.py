"""Running the model's function calls: ``ToolExecutor`` and what it is made of.

``executor.py`` holds the dispatch (``ToolExecutor``); ``calls.py`` the call and
what comes back for it; ``arguments.py`` parsing the call's arguments;
``policy_gate.py`` the policies' say (checks, approval pauses, ``before_run``,
``on_result``); ``handler.py`` running the handler; ``recording.py`` the events
that record the call; ``tracking.py`` the session wrapper that remembers the
call's state writes; ``timing.py`` the call's clock. ``tooling.runtime`` exports
``FunctionCall``, ``ToolExecution`` and ``ToolExecutor``.
"""
