"""Write the demo workspace: both storage layouts, filled by real lovia runs.

Nothing is inserted by hand: every row comes from ``Runner`` on scripted
models, lovia's stores, ``ChatStore`` bookkeeping mirroring the web UI, and
child processes killed mid-tool (the crashes) or while a refund waited for
its approval.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from pathlib import Path

from lovia import (
    CheckpointOptions,
    MaxTurnsExceeded,
    Runner,
    SQLiteCheckpointer,
    SQLiteSession,
)
from lovia.testing import batch, call, text
from lovia.web.store import ChatStore

from .agent import make_agent, slow_jobs
from .compaction import attachments_session, cached, compacted_session
from .crash import READY, AgentProcess
from .web_history import SMOKE_RUN, fork_of, launch_chat, morning_digest
from .webui import chat, open_record, web_run


@dataclass(frozen=True)
class DemoWorkspace:
    """The files the demo wrote and the ids worth opening."""

    directory: Path
    # Web-UI layout: assistant.db (ChatStore: transcripts, checkpoints, chat_*).
    crashed_run: str = "run-crashed"
    crashed_session: str = "chat-export"
    interrupted_run: str = "run-interrupted"
    interrupted_session: str = "chat-suppliers"
    failed_run: str = "run-failed"
    failed_session: str = "chat-risk"
    batch_run: str = "run-batch-cancelled"
    batch_session: str = "chat-jobs"
    crash_window_run: str = "run-crash-window"
    crash_window_session: str = "chat-weekly"
    orphan_run: str = "run-orphan"
    approval_run: str = "run-refund-waiting"  # killed while refund waited for approval
    approval_session: str = "chat-refund"
    trip_session: str = "chat-kyoto"
    tool_error_session: str = "chat-stock"
    handoff_session: str = "chat-handoff"
    trimmed_session: str = "chat-api-logs"
    untrimmed_session: str = "chat-gateway-logs"
    # lovia web's history: records of runs that saved nothing, a task, a schedule, a fork.
    launch_session: str = "chat-launch"
    launch_task_session: str = "chat-launch-t1"
    digest_schedule: str = "sched-digest"
    # Two-file layout: sessions.db (SQLiteSession) + runs.db (SQLiteCheckpointer).
    cli_session: str = "cli-daily"
    cli_crashed_run: str = "run-cli-crashed"  # in cli_session, linked by nothing
    cli_completed_run: str = "run-cli-report"
    cli_completed_session: str = "cli-report"
    compacted_session: str = "cli-compacted"
    attachments_session: str = "cli-attachments"

    @property
    def web_db(self) -> Path:
        return self.directory / "assistant.db"

    @property
    def sessions_db(self) -> Path:
        return self.directory / "sessions.db"

    @property
    def runs_db(self) -> Path:
        return self.directory / "runs.db"

    @property
    def files(self) -> tuple[Path, ...]:
        return (self.web_db, self.sessions_db, self.runs_db)

    @property
    def web_runs(self) -> tuple[str, ...]:
        """The checkpoints left in :attr:`web_db` (every other web run completed)."""
        return (
            self.crashed_run, self.interrupted_run, self.failed_run, self.batch_run,
            self.crash_window_run, self.orphan_run, self.approval_run,
        )  # fmt: skip

    @property
    def cli_runs(self) -> tuple[str, ...]:
        """The checkpoints left in :attr:`runs_db`."""
        return (self.cli_crashed_run, self.cli_completed_run)


def build_demo(directory: Path) -> DemoWorkspace:
    """Write the demo into ``directory`` (created if missing) in a few seconds.

    Refuses a directory already holding ``.db`` files: it never touches user data.
    """
    directory = Path(directory)
    if directory.is_dir() and any(directory.glob("*.db")):
        raise FileExistsError(
            f"{directory} already contains .db files; "
            "build the demo into an empty directory"
        )
    directory.mkdir(parents=True, exist_ok=True)
    ws = DemoWorkspace(directory)
    asyncio.run(_build(ws))
    return ws


async def _build(ws: DemoWorkspace) -> None:
    store = ChatStore.sqlite(ws.web_db)
    await open_record(
        store, ws.approval_session, ws.approval_run, "Refund for order A-17 ✋"
    )
    # Killed before the crashes start, so the crashed runs are the newest heads.
    with AgentProcess(
        ws.web_db, ws.web_db, ws.approval_session, ws.approval_run,
        prompt="Order A-17 arrived broken: refund it, please.", steps=1, refund=True,
    ) as approval_child:  # fmt: skip
        await _two_file_layout(ws)
        await chat(store, ws.crashed_session, "Nightly export 📦", [
            ("Is the nightly export healthy?", [
                call("lookup", {"topic": "export"}, call_id="call_export_1"),
                text("Yes: last success at 02:00 UTC, 1.2M rows."),
            ]),
            ("Thanks! Keep an eye on it.", [text("Will do. 👀")]),
        ])  # fmt: skip
        approval_child.wait_for(READY)
    await open_record(store, ws.crashed_session, ws.crashed_run)
    with (
        AgentProcess(
            ws.web_db, ws.web_db, ws.crashed_session, ws.crashed_run,
            prompt="Run the nightly export now, please.", steps=1,
        ) as web_child,
        AgentProcess(
            ws.sessions_db, ws.runs_db, ws.cli_session, ws.cli_crashed_run,
            prompt="Run the nightly export and summarise it.", steps=2, wal=False,
        ) as cli_child,
    ):  # fmt: skip
        await _web_layout(ws, store)
        web_child.wait_for(READY)
        cli_child.wait_for(READY)


async def _two_file_layout(ws: DemoWorkspace) -> None:
    """Completed sessions and a kept completed checkpoint, as a plain script writes them."""
    session, runs = SQLiteSession(ws.sessions_db), SQLiteCheckpointer(ws.runs_db)
    for prompt, script in [
        ("What's on today? 今日の予定は?", [
            call("lookup", {"topic": "weather"}, call_id="call_daily_1"),
            text("Sunny, 22°C ☀️ — a good day for 金閣寺.", reasoning="Check weather first."),
        ]),
        ("Any stock alerts?", [
            call("check_stock", {"sku": "CD-220"}, call_id="call_daily_2"),
            text("CD-220 is out of stock; reorder suggested."),
        ]),
    ]:  # fmt: skip
        await Runner.run(
            make_agent(script), prompt, session=session, session_id=ws.cli_session
        )
    await Runner.run(
        make_agent(
            [cached(text("Report ready: 3 services, 0 incidents. 🟢"), 900, 300)]
        ),
        "Write the daily report.",
        session=session,
        session_id=ws.cli_completed_session,
        checkpoint=CheckpointOptions(runs, ws.cli_completed_run),
    )
    await compacted_session(session, ws.compacted_session)
    await attachments_session(session, ws.attachments_session)


async def _web_layout(ws: DemoWorkspace, store: ChatStore) -> None:
    """Everything in the web UI's single file except the crashed run."""
    await chat(store, ws.trip_session, "Two days in Kyoto 🗾", [
        ("Plan two days in Kyoto for me.", [
            call("lookup", {"topic": "kyoto"}, call_id="call_kyoto_1"),
            text(
                "Day 1: 金閣寺 at 9:00, then 嵐山 🎋. Day 2: 伏見稲荷大社 at dawn ⛩️.",
                reasoning="Temples open early; Fushimi Inari is 24h, go at dawn.",
            ),
        ]),
        ("And the weather?", [
            call("lookup", {"topic": "weather"}, call_id="call_kyoto_2"),
            text("Saturday 晴れ 22°C ☀️, Sunday light rain 🌧️: swap the days."),
        ]),
        ("Compare it with Osaka.", [
            batch(
                ("lookup", {"topic": "kyoto"}, "call_kyoto_3"),
                ("lookup", {"topic": "osaka"}, "call_kyoto_4"),
            ),
            text("Kyoto for temples, Osaka (大阪) for food 🍜. Do both!"),
        ]),
    ])  # fmt: skip
    await chat(store, ws.tool_error_session, "Stock check", [
        ("How many ZZ-999 do we have?", [
            call("check_stock", {"sku": "ZZ-999"}, call_id="call_stock_1"),
            text("ZZ-999 is not a SKU we know. Did you mean AB-100?"),
        ]),
        ("Yes, AB-100.", [
            call("check_stock", {"sku": "AB-100"}, call_id="call_stock_2"),
            text("AB-100: 42 units in stock. 📦"),
        ]),
    ])  # fmt: skip
    await chat(store, ws.handoff_session, "Supplier research 🔎", [
        ("Which supplier should we pick?", [
            call("transfer_to_researcher", {"reason": "needs supplier research"},
                 call_id="call_handoff_1"),
        ], [
            call("lookup", {"topic": "suppliers"}, call_id="call_handoff_2"),
            text("深圳电子 has the better rating (4.6★) but a longer lead time.",
                 reasoning="Rating vs lead time trade-off."),
        ]),
        ("Thanks, summarise in one line.", [text("Pick 深圳电子 unless you need it in 2 weeks.")]),
    ])  # fmt: skip
    await chat(store, ws.trimmed_session, "API logs (trimmed)", [
        ("Show me the API logs.", [
            call("fetch_logs", {"service": "api"}, call_id="call_api_1"),
            text("The API log shows an ERROR every ~97 requests."),
        ]),
        ("And the worker's?", [
            call("fetch_logs", {"service": "worker", "kb": 20}, call_id="call_api_2"),
            text("The worker looks the same."),
        ]),
        ("OK, thanks.", [text("You're welcome! 🙂")]),
    ])  # fmt: skip
    await store.session.trim_tool_results(ws.trimmed_session, keep_chars=200)
    await chat(store, ws.untrimmed_session, "Gateway logs (full 100 KB)", [
        ("Dump the gateway logs.", [
            call("fetch_logs", {"service": "gateway"}, call_id="call_gw_1"),
            text("Here they are: ~100 KB, mostly INFO lines."),
        ]),
    ])  # fmt: skip
    await _unfinished_web_runs(ws, store)
    await _web_history(ws, store)


async def _web_history(ws: DemoWorkspace, store: ChatStore) -> None:
    """Run records with no transcript, a subagent task, a schedule, a fork."""
    await launch_chat(store, ws.launch_session, ws.launch_task_session)
    await morning_digest(store, ws.digest_schedule)
    await fork_of(store, ws.launch_session, SMOKE_RUN)


async def _results_saved(store: ChatStore, run_id: str, call_ids: set[str]) -> None:
    """Wait (bounded) until the checkpoint holds these results: lovia saves a
    result just after reporting it, and a cancel in between would lose it."""
    async with asyncio.timeout(30):
        while True:
            snapshot = await store.checkpointer.load(run_id)
            saved = {
                getattr(e, "call_id", None)
                for e in snapshot.entries
                if e.type == "tool_result"
            }
            if call_ids <= saved:
                return
            await asyncio.sleep(0.01)  # bounded by the timeout above


async def _unfinished_web_runs(ws: DemoWorkspace, store: ChatStore) -> None:
    """Interrupted, failed, cancelled-batch, crash-window and orphan runs."""
    await chat(store, ws.interrupted_session, "Compare suppliers ⏱️", [
        ("List our suppliers.", [text("Acme GmbH and 深圳电子有限公司.")]),
    ])  # fmt: skip
    with contextlib.suppress(MaxTurnsExceeded):
        await web_run(store, ws.interrupted_session, "Compare them on every axis.", [
            call("lookup", {"topic": "suppliers"}, call_id="call_cmp_1"),
            call("lookup", {"topic": "osaka"}, call_id="call_cmp_2"),
        ], run_id=ws.interrupted_run, max_turns=2)  # fmt: skip

    with contextlib.suppress(AssertionError):  # the researcher's script runs out
        await web_run(
            store, ws.failed_session, "Research supplier risk in depth.",
            [call("transfer_to_researcher", {"reason": "deep dive"}, call_id="call_risk_1")],
            [call("lookup", {"topic": "suppliers"}, call_id="call_risk_2")],
            run_id=ws.failed_run, title="Supplier risk (failed)",
        )  # fmt: skip

    job_started, finished = asyncio.Event(), asyncio.Queue[str]()
    with slow_jobs(60, job_started.set):
        task = asyncio.create_task(web_run(
            store, ws.batch_session, "Run the export and look up Kyoto and Osaka.", [
                batch(
                    ("lookup", {"topic": "kyoto"}, "call_jobs_1"),
                    ("run_job", {"job": "export"}, "call_jobs_2"),
                    ("lookup", {"topic": "osaka"}, "call_jobs_3"),
                ),
                text("All three done."),
            ], run_id=ws.batch_run, title="Parallel jobs (cancelled)",
            finished=finished,
        ))  # fmt: skip
    await job_started.wait()
    for _ in range(2):  # both lookups finished; run_job is sleeping
        await finished.get()
    await _results_saved(store, ws.batch_run, {"call_jobs_1", "call_jobs_3"})
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        if asyncio.current_task().cancelling():  # type: ignore[union-attr]
            raise  # Ctrl+C cancelled the build too, not only the run

    await chat(store, ws.crash_window_session, "Weekly summary 🗓️", [
        ("What happened this week?", [text("Two deploys, zero incidents. 🎉")]),
    ])  # fmt: skip
    await web_run(
        store, ws.crash_window_session, "Write it up for the team.",
        [text("Weekly summary: 2 deploys, 0 incidents, export healthy. ✅")],
        run_id=ws.crash_window_run, lose_append=True,
    )  # fmt: skip

    with contextlib.suppress(MaxTurnsExceeded):  # no session, no chat row: an orphan
        await Runner.run(
            make_agent([call("lookup", {"topic": "weather"}, call_id="call_orphan_1")]),
            "Check the weather for the offsite.",
            checkpoint=CheckpointOptions(store.checkpointer, ws.orphan_run),
            max_turns=1,
        )
