"""``curvine-fuse validate-config`` before a FUSE starts (SPEC §5): the binary's own check of the
mount key's configuration file and flags, a few milliseconds, so a combination only curvine-fuse
knows to refuse (or a node setting it cannot use) fails NodeStage with its own words at once, not
after a start timeout. Run only where the program is installed beside the node service."""

from __future__ import annotations

import asyncio
import contextlib

from csi.model.fusecmd import VALIDATE_COMMAND

TIMEOUT = 10.0


async def refusal(command: list[str], args: list[str]) -> str | None:
    """What ``validate-config`` says against ``args`` (the mount's arguments after the program),
    None when it accepts them. ``command`` is the FUSE program's argv prefix."""
    proc = await asyncio.create_subprocess_exec(
        *command,
        VALIDATE_COMMAND,
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), TIMEOUT)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        return f"{VALIDATE_COMMAND} did not answer within {TIMEOUT:.0f}s"
    except BaseException:
        # Cancelled (the FUSE it ran beside failed, or the call went): nothing waits for its answer.
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        raise
    if proc.returncode == 0:
        return None
    said = (err or out).decode(errors="replace").strip()[-800:]
    return f"{VALIDATE_COMMAND} exited {proc.returncode}: {said}"
