"""How long a test waits on something outside its own code, at most.

Each limit is far above the normal time (a loaded, shared 2-core machine can
be ten times slower than a quiet one), and each is the most a wait on a
condition may take, never a pause: a test that waits on a condition returns as
soon as it holds, so a generous limit costs nothing when the machine is fast.
A test must not fail because the machine is slow.
"""

from __future__ import annotations

# A Python or manage.py subprocess (migrate, collectstatic, check, a settings
# probe) that takes a few seconds on a quiet machine.
SUBPROCESS_SECONDS = 600
# A server or worker process until it listens (a second or two when quiet).
LISTEN_SECONDS = 120
# One HTTP request to a local test server (milliseconds when quiet).
REQUEST_SECONDS = 60
# Threads of one test meeting at a barrier or finishing their work.
THREAD_SECONDS = 120
# A browser page, an element or a script's effect on the page (a second when
# quiet).
BROWSER_SECONDS = 60
# Something that must stop at a limit of about a second (a deadline, a timeout,
# a budget): how much later than its limit it may stop on a loaded machine.
# A test that uses it makes the case without the limit take far longer (a
# provider or a server that answers only after minutes, a command that never
# ends), so the check still tells a working limit from a missing one.
LATE_SECONDS = 30
