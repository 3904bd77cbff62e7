"""kubectl_fluid/spans.py: a call's named steps in milliseconds, recorded beneath a recording only,
across tasks and threads started with the call's context; nothing recorded (and nothing to pay but a
lookup) without one."""

from __future__ import annotations

import asyncio
import time

from kubectl_fluid import spans


def test_steps_are_summed_by_name_in_the_order_they_first_ended() -> None:
    with spans.recording(True) as timing:
        for name in ("b", "a", "b"):
            with spans.step(name):
                time.sleep(0.002)
    assert timing is not None
    assert list(timing.steps) == ["b", "a"]
    assert timing.steps["b"] > timing.steps["a"] > 1.0
    fields = timing.fields()
    assert fields["total_ms"] >= timing.steps["b"] + timing.steps["a"]
    assert set(fields["steps_ms"]) == {"a", "b"}


def test_without_a_recording_nothing_is_recorded() -> None:
    with spans.recording(False) as timing, spans.step("a"):
        pass
    assert timing is None
    with spans.step("outside"):
        pass


def test_tasks_and_threads_of_the_call_record_into_it_and_calls_side_by_side_apart() -> None:
    async def call(name: str) -> dict[str, float]:
        with spans.recording(True) as timing:
            assert timing is not None

            async def in_task() -> None:
                with spans.step(f"{name} task"):
                    await asyncio.sleep(0)

            def in_thread() -> None:
                with spans.step(f"{name} thread"):
                    pass

            await asyncio.ensure_future(in_task())
            await asyncio.to_thread(in_thread)
            return timing.steps

    async def both() -> list[dict[str, float]]:
        return list(await asyncio.gather(call("one"), call("two")))

    one, two = asyncio.run(both())
    assert set(one) == {"one task", "one thread"}
    assert set(two) == {"two task", "two thread"}
