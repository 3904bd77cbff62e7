"""The pods/exec stream protocol (kubectl_fluid/kube/execframes.py): frames, Status, output limits."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubectl_fluid.kube import execframes
from kubectl_fluid.kube.execframes import ExecProtocolError, ExecStream, exec_query, status_outcome, tail

SUCCESS = json.dumps({"metadata": {}, "status": "Success"}).encode()


def exit_status(code: int) -> bytes:
    return json.dumps(
        {
            "metadata": {},
            "status": "Failure",
            "message": f"command terminated with non-zero exit code: exit code {code}",
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
        }
    ).encode()


def frame(channel: int, data: bytes) -> bytes:
    return bytes([channel]) + data


def test_kubelets_empty_opening_frames_then_output_then_success() -> None:
    s = ExecStream()
    for f in (frame(1, b""), frame(2, b""), frame(3, b""), frame(1, b'{"mounted":'), frame(1, b"[]}\n")):
        s.feed(f)
    assert not s.finished
    s.feed(frame(2, b"Running: cv mount\n"))
    s.feed(frame(3, SUCCESS))
    assert (s.exit_code, s.failure, bytes(s.stdout), bytes(s.stderr)) == (
        0,
        None,
        b'{"mounted":[]}\n',
        b"Running: cv mount\n",
    )


def test_a_non_zero_exit_is_an_exit_code_not_a_failure() -> None:
    assert status_outcome(exit_status(3)) == (3, None)
    assert status_outcome(exit_status(137)) == (137, None)


def test_an_exec_that_could_not_run_is_a_failure_with_the_servers_message() -> None:
    body = {"status": "Failure", "message": 'container "nope" not found', "reason": "BadRequest"}
    assert status_outcome(json.dumps(body).encode()) == (None, 'container "nope" not found')
    # NonZeroExitCode without a readable cause: no code can be made up.
    odd = {"status": "Failure", "reason": "NonZeroExitCode", "message": "m", "details": {"causes": []}}
    assert status_outcome(json.dumps(odd).encode()) == (None, "m")


@pytest.mark.parametrize("data", [b"not json", b"[1]", b'"Success"'])
def test_the_error_channel_must_carry_a_status(data: bytes) -> None:
    with pytest.raises(ExecProtocolError):
        status_outcome(data)


def test_unknown_channels_are_a_protocol_error_and_v5_close_frames_are_ignored() -> None:
    s = ExecStream()
    s.feed(frame(255, b"\x00"))
    s.feed(b"")
    with pytest.raises(ExecProtocolError):
        s.feed(frame(9, b"x"))


def test_stdout_keeps_its_head_and_stderr_its_tail() -> None:
    s = ExecStream()
    big = b"o" * (execframes.STDOUT_LIMIT + 10)
    s.feed(frame(1, big))
    s.feed(frame(1, b"lost"))
    assert len(s.stdout) == execframes.STDOUT_LIMIT
    s.feed(frame(2, b"a" * execframes.STDERR_LIMIT))
    s.feed(frame(2, b"the end"))
    assert len(s.stderr) == execframes.STDERR_LIMIT
    assert s.stderr.endswith(b"the end")


@given(st.lists(st.tuples(st.sampled_from([1, 2]), st.binary(max_size=64)), max_size=30), st.integers(0, 255))
def test_any_split_of_the_output_into_frames_gives_the_same_bytes(
    chunks: list[tuple[int, bytes]], code: int
) -> None:
    s = ExecStream()
    for channel, data in chunks:
        s.feed(frame(channel, data))
    s.feed(frame(3, SUCCESS if code == 0 else exit_status(code)))
    assert bytes(s.stdout) == b"".join(d for c, d in chunks if c == 1)
    assert bytes(s.stderr) == b"".join(d for c, d in chunks if c == 2)
    assert s.exit_code == code
    assert s.finished


def test_the_query_names_each_word_and_asks_for_no_stdin_or_tty() -> None:
    q = exec_query(["bash", "-c", "/app/curvine/mountUfs.sh"], "master")
    assert [v for k, v in q if k == "command"] == ["bash", "-c", "/app/curvine/mountUfs.sh"]
    assert dict((k, v) for k, v in q if k != "command") == {
        "container": "master",
        "stdin": "false",
        "stdout": "true",
        "stderr": "true",
        "tty": "false",
    }
    with pytest.raises(ValueError, match="needs a command"):
        exec_query([], "c")


def test_tail_keeps_the_last_lines_within_a_limit() -> None:
    text = b"\n".join(f"line {i}".encode() for i in range(30)) + b"\n\n"
    assert tail(text, lines=2) == "line 28\nline 29"
    assert len(tail(b"x" * 5000, limit=100)) == 100
    assert tail(b"\xff bad utf8") == "\ufffd bad utf8"
