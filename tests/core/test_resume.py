"""Resume and replay through lovia's Runner, on runs lovia really crashed, cancelled or completed."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from lovia import (
    CheckpointOptions,
    MaxTurnsExceeded,
    Runner,
    SQLiteCheckpointer,
    events,
)
from lovia.testing import call, text
from support import resume as support_resume
from support.resume import (
    FINAL,
    RUN,
    SESSION,
    Jobs,
    copy_workspace,
    head_status,
    make_assistant,
    session_rows,
)

from lovia_tui.core.errors import ActionError, LoviaTuiError
from lovia_tui.core.models import RunInfo
from lovia_tui.core.run_status import WEB_MAY_RUN
from lovia_tui.core.runs.agents import DepsSpec, load_agent, unreachable_reason
from lovia_tui.core.runs.console import ConsoleEvent
from lovia_tui.core.runs.preflight import Preflight, preflight, preflight_replay
from lovia_tui.core.runs.resume import RunControl, replay, resume
from lovia_tui.core.store.workspace import Workspace

TIMEOUT = 20  # bounded: a run that hangs fails the test instead


crashed_template, ws_dir = (
    support_resume.crashed_template,
    support_resume.ws_dir,
)  # fixtures


@pytest.fixture
def jobs(tmp_path: Path) -> Jobs:
    return Jobs(tmp_path / "jobs.log")


async def _preflight(directory: Path, run_id: str = RUN, **options) -> Preflight:
    options.setdefault("stale_after", 0)
    ws = await Workspace.open([directory])
    try:
        return await preflight(ws, run_id, **options)
    finally:
        await ws.close()


async def _preflight_replay(directory: Path, run_id: str, **options) -> Preflight:
    ws = await Workspace.open([directory])
    try:
        return await preflight_replay(ws, run_id, **options)
    finally:
        await ws.close()


async def _drain(stream, on_event=None) -> list[ConsoleEvent]:
    seen = []
    async with asyncio.timeout(TIMEOUT):
        async for event in stream:
            seen.append(event)
            if on_event is not None:
                on_event(event)
    return seen


def _assistant():
    return load_agent("support.resume:assistant")


async def test_resume_reexecutes_the_crashed_call_once_and_stores_the_run(
    ws_dir: Path, jobs: Jobs
) -> None:
    pf = await _preflight(
        ws_dir, agent=_assistant(), deps=DepsSpec("jobs", jobs), session_id=SESSION
    )
    assert pf.ok, pf.problems
    assert pf.stale and pf.status == "running" and pf.reachable
    assert [c.name for c in pf.dangling] == ["run_job"]
    assert (pf.session_source, pf.session_file) == ("given", ws_dir / "sessions.db")
    assert any("wrong history" in w for w in pf.warnings)
    assert any("at least once" in w for w in pf.warnings)

    seen = await _drain(resume(pf))

    kinds = [e.kind for e in seen]
    for kind in ("run_started", "turn_started", "tool_started", "tool_result", "text_delta",
                 "message_completed", "turn_ended", "log", "usage"):  # fmt: skip
        assert kind in kinds
    assert kinds[-1] == "run_completed"
    assert seen[-1].data == {"status": "completed", "output": FINAL}
    assert "".join(e.text for e in seen if e.kind == "text_delta") == FINAL
    assert jobs.calls() == ["nightly-export"]
    assert [row[:2] for row in session_rows(ws_dir / "sessions.db")][-1] == (
        SESSION,
        RUN,
    )
    assert head_status(ws_dir / "runs.db", RUN) == "completed"

    again = await _preflight(ws_dir, agent=_assistant(), session_id=SESSION)
    assert any("completed" in p for p in again.problems)
    with pytest.raises(ActionError, match="cannot resume"):
        resume(again)


async def test_delete_on_success_drops_the_checkpoint_once_stored(
    ws_dir: Path, jobs: Jobs
) -> None:
    pf = await _preflight(
        ws_dir,
        agent=_assistant(),
        deps=DepsSpec("jobs", jobs),
        session_id=SESSION,
        delete_on_success=True,
    )
    seen = await _drain(resume(pf))
    assert seen[-1].kind == "run_completed"
    assert head_status(ws_dir / "runs.db", RUN) is None
    assert (SESSION, RUN) in [row[:2] for row in session_rows(ws_dir / "sessions.db")]


async def test_cancel_mid_resume_interrupts_and_the_run_resumes_again(
    ws_dir: Path, tmp_path: Path
) -> None:
    gate = Jobs(tmp_path / "jobs.log", release=asyncio.Event())
    control = RunControl()

    def cancel_inside_the_tool(event: ConsoleEvent) -> None:
        if event.kind == "tool_started":
            control.cancel()
            gate.release.set()

    pf = await _preflight(
        ws_dir, agent=_assistant(), deps=DepsSpec("jobs", gate), session_id=SESSION
    )
    seen = await _drain(resume(pf, control), cancel_inside_the_tool)

    assert seen[-1].kind == "run_failed"
    assert seen[-1].data["status"] == "interrupted"
    assert seen[-1].data["error_type"] == "RunCancelled"
    assert head_status(ws_dir / "runs.db", RUN) == "interrupted"
    assert RUN not in [row[1] for row in session_rows(ws_dir / "sessions.db")]

    jobs = Jobs(gate.log)
    again = await _preflight(
        ws_dir, agent=_assistant(), deps=DepsSpec("jobs", jobs), session_id=SESSION
    )
    assert (
        again.ok and again.dangling == ()
    )  # the call's result was saved before stopping
    assert (await _drain(resume(again)))[-1].kind == "run_completed"
    assert jobs.calls() == ["nightly-export"]
    assert head_status(ws_dir / "runs.db", RUN) == "completed"


@pytest.mark.parametrize(
    ("agent", "stop_at", "dangling"),
    [
        ("assistant", "tool_started", ["run_job"]),  # cut off inside the tool
        # left unanswered: lovia stops there and a resume asks again
        ("deploying_assistant", "approval_required", ["deploy"]),
    ],
)
async def test_leaving_the_stream_early_never_leaves_the_run_running(
    ws_dir: Path, tmp_path: Path, agent: str, stop_at: str, dangling: list[str]
) -> None:
    held = Jobs(tmp_path / "jobs.log", release=asyncio.Event())
    pf = await _preflight(
        ws_dir,
        agent=load_agent(f"support.resume:{agent}"),
        deps=DepsSpec("jobs", held if stop_at == "tool_started" else Jobs(held.log)),
        session_id=SESSION,
    )
    stream = resume(pf, RunControl(answering="ask"))
    async with asyncio.timeout(TIMEOUT):
        async for event in stream:
            if event.kind == stop_at:
                break
        await stream.aclose()
    assert head_status(ws_dir / "runs.db", RUN) == "interrupted"
    again = await _preflight(ws_dir, agent=_assistant(), session_id=SESSION)
    assert [c.name for c in again.dangling] == dangling


async def test_approvals_are_left_to_lovia_unless_the_caller_asks(
    crashed_template: Path, tmp_path: Path
) -> None:
    for ask in (False, True):
        directory = copy_workspace(crashed_template, tmp_path / f"ws-{ask}")
        control = RunControl(answering="ask" if ask else "agent")

        def approve(event: ConsoleEvent, control: RunControl = control) -> None:
            if event.kind == "approval_required":
                control.approve(event.data["call_id"])

        pf = await _preflight(
            directory,
            agent=load_agent("support.resume:deploying_assistant"),
            deps=DepsSpec("jobs", Jobs(tmp_path / f"jobs-{ask}.log")),
            session_id=SESSION,
        )
        seen = await _drain(resume(pf, control), approve)
        result = next(
            e for e in seen if e.kind == "tool_result" and e.data["name"] == "deploy"
        )
        assert result.data["is_error"] is not ask
        assert result.data["output"] == (
            "deployed to prod" if ask else "Tool deploy was not approved."
        )
        assert seen[-1].kind == "run_completed"


async def test_unreachable_agent_is_refused_with_lovias_reason(ws_dir: Path) -> None:
    pf = await _preflight(
        ws_dir, agent=load_agent("support.resume:stranger"), session_id=SESSION
    )
    assert pf.reachable is False
    [reason] = [p for p in pf.problems if "not reachable" in p]
    with pytest.raises(ActionError):
        resume(pf)

    # lovia's own refusal says the same.
    handle = Runner.stream(
        load_agent("support.resume:stranger").build(),
        [],
        checkpoint=CheckpointOptions(
            SQLiteCheckpointer(ws_dir / "runs.db"), RUN, if_run_exists="resume_only"
        ),
    )
    failures = [e async for e in handle if isinstance(e, events.RunFailed)]
    assert str(failures[0].error).split("\n")[0].rstrip(".") in reason

    through_handoff = await _preflight(
        ws_dir, agent=load_agent("support.resume:front_desk"), session_id=SESSION
    )
    assert through_handoff.reachable is True and through_handoff.ok


async def test_missing_agent_live_run_and_unknown_session_block(ws_dir: Path) -> None:
    pf = await _preflight(ws_dir, agent=None, stale_after=3600)
    assert any(p.startswith("resume needs --agent MODULE:ATTR") for p in pf.problems)
    assert any("is running and saved" in p for p in pf.problems)
    assert any("linked to no session" in p for p in pf.problems)

    forced = await _preflight(
        ws_dir, agent=_assistant(), session_id=SESSION, stale_after=3600, force=True
    )
    assert forced.ok and any("is running and saved" in w for w in forced.warnings)

    with pytest.raises(ActionError, match="no checkpoint 'nope' in the open files"):
        await _preflight(ws_dir, "nope", agent=_assistant())


async def test_max_turns_carry_over(tmp_path: Path, jobs: Jobs) -> None:
    runs = tmp_path / "runs.db"
    with pytest.raises(MaxTurnsExceeded):
        await Runner.run(
            make_assistant([call("run_job", {"job": "a"}, call_id="c1")]),
            "Run job a.",
            deps=jobs,
            max_turns=1,
            checkpoint=CheckpointOptions(SQLiteCheckpointer(runs), "run-turns"),
        )
    pf = await _preflight(tmp_path, "run-turns", agent=_assistant(), no_session=True)
    assert pf.ok and pf.max_turns > pf.run.turns == 1
    assert any("MaxTurnsExceeded" in w for w in pf.warnings)
    too_few = await _preflight(
        tmp_path, "run-turns", agent=_assistant(), no_session=True, max_turns=1
    )
    assert any("must exceed the 1 turn the run" in p for p in too_few.problems)

    seen = await _drain(
        resume(
            await _preflight(
                tmp_path, "run-turns", agent=_assistant(), no_session=True, max_turns=2
            )
        )
    )
    assert seen[-1].data == {"status": "completed", "output": FINAL}


async def test_replay_heals_a_lost_session_append_exactly_once(ws_dir: Path) -> None:
    await Runner.run(  # a crash between checkpoint completion and session append looks like this
        make_assistant([text("Weekly summary: all green.")]),
        "Write the weekly summary.",
        checkpoint=CheckpointOptions(
            SQLiteCheckpointer(ws_dir / "runs.db"), "run-window"
        ),
    )
    before = session_rows(ws_dir / "sessions.db")

    unlinked = await _preflight_replay(ws_dir, "run-window")
    assert any("linked to no session" in p for p in unlinked.problems)

    pf = await _preflight_replay(ws_dir, "run-window", session_id=SESSION)
    assert pf.ok and not pf.already_in_session
    assert any("the replay appends it" in w for w in pf.warnings)
    seen = await _drain(replay(pf))
    assert [e.kind for e in seen] == ["run_started", "usage", "run_completed"]
    assert seen[-1].data["output"] == "Weekly summary: all green."
    # Every count lovia keeps, as the Runs pane tells them (cache tokens too).
    assert seen[1].text.startswith("usage: ") and "cache read" in seen[1].text
    assert seen[1].text.endswith(" tokens · 1 turn")
    healed = session_rows(ws_dir / "sessions.db")
    assert healed[:-1] == before and healed[-1][:2] == (SESSION, "run-window")

    second = await _preflight_replay(ws_dir, "run-window")
    assert (
        second.ok and second.already_in_session and second.session_source == "segment"
    )
    assert (await _drain(replay(second)))[-1].kind == "run_completed"
    assert session_rows(ws_dir / "sessions.db") == healed

    elsewhere = await _preflight_replay(ws_dir, "run-window", session_id="other")
    assert any("wrong conversation" in p for p in elsewhere.problems)

    not_done = await _preflight_replay(ws_dir, RUN, session_id=SESSION)
    assert any("resume it instead" in p for p in not_done.problems)


async def test_demo_web_runs_resume_and_replay_in_their_linked_sessions(
    demo_dir, tmp_path: Path
) -> None:
    directory = tmp_path / "demo"
    shutil.copytree(demo_dir.directory, directory)
    agent = load_agent("lovia_tui.demo:agent")

    pf = await _preflight(directory, demo_dir.crashed_run, agent=agent)
    assert pf.ok, pf.problems
    assert (pf.session_id, pf.session_source) == (demo_dir.crashed_session, "web")
    # Its web record still says running: a server that is up may be running
    # it, and its page offers to reconnect it while this resume goes.
    assert pf.run.web_status == "running" and pf.stale_reason is not None
    assert pf.stale_reason.endswith(WEB_MAY_RUN)
    assert any("reconnected there too" in warning for warning in pf.warnings)
    assert (await _drain(resume(pf)))[-1].kind == "run_completed"

    window = await _preflight_replay(directory, demo_dir.crash_window_run)
    assert (window.session_id, window.session_source) == (
        demo_dir.crash_window_session,
        "web",
    )
    assert (await _drain(replay(window)))[-1].kind == "run_completed"
    run_ids = [row[1] for row in session_rows(directory / demo_dir.web_db.name)]
    assert {demo_dir.crashed_run, demo_dir.crash_window_run} <= set(run_ids)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_colon", "must be MODULE:ATTR"),
        ("no_such_module_xyz:agent", "no module named 'no_such_module_xyz'"),
        (
            "support.resume:missing",
            "module 'support.resume' has no attribute 'missing'",
        ),
        (
            "support.resume:not_an_agent",
            "expected a lovia Agent or a zero-argument factory returning one, got int",
        ),
        (
            "support.resume:broken",
            "the factory raised RuntimeError: no API key configured",
        ),
        (
            "support.resume:not_an_agent_factory",
            "the factory returned str, not a lovia Agent",
        ),
    ],
)
def test_bad_agent_specs_are_one_line_errors(spec: str, message: str) -> None:
    with pytest.raises(LoviaTuiError) as caught:
        load_agent(spec)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_reachability_follows_handoffs() -> None:
    run = RunInfo(
        file=Path("x.db"), run_id="r", agent_name="researcher", status="running", turns=1, usage={},
        output=None, error=None, last_input_tokens=None, context_state={}, pending_handoff=None,
        updated_at=0.0, started_at=None, entries=0, last_seq=None, head={},
    )  # fmt: skip
    assert (
        unreachable_reason(load_agent("support.resume:front_desk").build(), run) is None
    )
    assert "not reachable" in unreachable_reason(
        load_agent("support.resume:stranger").build(), run
    )
