"""The registry of local shell executors an operator can name."""

from __future__ import annotations

import pytest

from tooling import shell_executors
from tooling.runtime.local_shell import CommandPolicy, CommandRun, ScratchExecutor


class _Echo:
    policy = CommandPolicy(allowed_programs=("echo",))

    def run(
        self,
        command: str,
        *,
        filesystem: object,
        timeout_ms: int,
        max_output_length: int,
    ) -> CommandRun:
        return CommandRun(command, stdout=command)


def test_the_product_ships_only_the_scratch_executor() -> None:
    assert shell_executors.names() == ("scratch",)
    scratch = shell_executors.get("scratch")
    assert isinstance(scratch, ScratchExecutor)
    # read-only text programs only: nothing that deletes, fetches or runs code
    assert set(scratch.policy.allowed_programs) <= set(shell_executors.SCRATCH_PROGRAMS)
    assert not {"rm", "sh", "bash", "python", "curl"} & scratch.policy.allowed_programs


def test_register_get_and_unregister() -> None:
    shell_executors.register("echo-test", _Echo())
    try:
        assert "echo-test" in shell_executors.names()
        assert shell_executors.registry()["echo-test"] is shell_executors.get(
            "echo-test"
        )
        with pytest.raises(ValueError, match="already registered"):
            shell_executors.register("echo-test", _Echo())
    finally:
        shell_executors.unregister("echo-test")
    assert "echo-test" not in shell_executors.registry()
    with pytest.raises(
        KeyError, match="No shell executor is registered as 'echo-test'"
    ):
        shell_executors.get("echo-test")


@pytest.mark.parametrize("name", ["", "Bad", "has space", "x" * 65, "1st", None])
def test_names_are_checked(name: object) -> None:
    with pytest.raises(ValueError, match="must be 1-64 lowercase"):
        shell_executors.register(name, _Echo())  # type: ignore[arg-type]


def test_an_object_without_run_is_refused() -> None:
    with pytest.raises(TypeError, match="must have a run"):
        shell_executors.register("nothing", object())  # type: ignore[arg-type]


def test_the_registry_view_is_read_only() -> None:
    with pytest.raises(TypeError):
        shell_executors.registry()["x"] = _Echo()  # type: ignore[index]
