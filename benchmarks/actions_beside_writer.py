"""A lovia writer's append latency while lovia-tui acts on the very session it appends to.

``python benchmarks/actions_beside_writer.py [--segments N] [--checkpoints N] [--gap S]``

1. alone: ``writer.py`` (``SQLiteSession(path, wal=True).append`` in its own
   process, 200 appends 20 ms apart) appends to session ``target``;
2. beside actions: the same writer again, while this process performs, one
   every ``--gap`` seconds (default 0.25 s: a shell loop of ``lovia-tui rewind
   --yes`` manages one per ~0.6 s, the cold start alone; ``--gap 0`` is back to
   back) until the writer is done, a rewind of ``target`` (dropping what the
   writer added), a trim of ``target``, a rewind of ``neighbour`` (a session
   of ``--segments`` runs in the same file nobody appends to) to half then its
   undo, a rewind of its last turn (the support story) then its undo,
   and every other round first a bulk delete of ``--checkpoints`` completed
   checkpoints (one of ``BATCHES`` seeded beforehand, chosen by age, so no
   re-seeding competes with the writer) — each one previewed, then performed
   through :func:`lovia_tui.core.actions.perform.perform` (check, journal and lovia's
   change under one write lock on the file).

Most actions on ``target`` are refused: the writer appends every 20 ms, so
its rows have usually moved on between the preview and the action (refused,
nothing changed: the right answer). The ``neighbour`` actions are what keep
the write lock busy.

Budget: p99 beside ≤ p99 alone + 50 ms. Also reported: how long each action
held the write lock, and how many were refused because the writer had moved
the rows on since the preview (refused, nothing changed: the right answer).
Results go to ``benchmarks/results/actions-<segments>-gap<gap>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from probe import percentile  # noqa: E402

BATCHES = 4
"""Batches of ``--checkpoints`` checkpoints seeded, one per bulk delete."""
from run_all import Measure, append_latencies, run_writer  # noqa: E402


async def seed(path: Path, segments: int, checkpoints: int) -> None:
    """The target session and completed checkpoints, written by lovia."""
    from lovia import SQLiteSession
    from lovia.transcript import (
        AssistantTextEntry,
        InputEntry,
        ToolCallEntry,
        ToolResultEntry,
    )

    session = SQLiteSession(path, wal=True)
    for session_id, count in (("target", 20), ("neighbour", segments)):
        for n in range(count):
            entries = [
                InputEntry(role="user", content=f"question {n}"),
                ToolCallEntry(call_id=f"c{n}", name="dump", arguments="{}"),
                ToolResultEntry(call_id=f"c{n}", output="log line\n" * 200),
                AssistantTextEntry(content=f"answer {n}"),
            ]
            await session.append(session_id, entries, run_id=f"{session_id}-{n}")
    await seed_checkpoints(path, checkpoints)


def batch_age(batch: int) -> float:
    """Days since batch ``batch``'s checkpoints were saved: batch 0 is the oldest."""
    return 10.0 + BATCHES - batch


async def seed_checkpoints(path: Path, count: int) -> None:
    from lovia import RunHead, SQLiteCheckpointer, Usage
    from lovia.transcript import InputEntry

    checkpointer = SQLiteCheckpointer(path, wal=True)
    for batch in range(BATCHES):
        saved = time.time() - batch_age(batch) * 86400
        for n in range(count):
            head = RunHead("worker", Usage(), 1, status="completed", updated_at=saved)
            entries = [InputEntry(role="user", content=f"q{n}")]
            await checkpointer.append(f"done-{batch}-{n}", entries, head)


async def act_until(path: Path, stop: threading.Event, gap: float) -> dict:
    """Rewind, trim and bulk-delete beside the writer until ``stop``; what happened."""
    from lovia_tui.core.actions.perform import load_lovia, perform, undo
    from lovia_tui.core.actions.run_plans import preview_delete_runs
    from lovia_tui.core.actions.session_plans import preview_rewind
    from lovia_tui.core.actions.trim_plan import preview_trim
    from lovia_tui.core.errors import ActionError
    from lovia_tui.core.store.workspace import Workspace

    load_lovia()
    held: dict[str, list[float]] = {}
    refused = rounds = undone = 0
    ws = await Workspace.open([path])
    try:
        # Every rewind cuts back to the seeded entries: the writer's are the tail.
        keep = (await preview_rewind(ws, "target", 0)).total_entries
        total = (await preview_rewind(ws, "neighbour", 0)).total_entries
        half, last_turn = total // 2, total - 4  # a run is 4 entries
        while not stop.is_set():  # bounded by the writer's run
            rounds += 1
            plans = []
            if rounds % 2 == 1 and rounds // 2 < BATCHES:
                days = batch_age(rounds // 2) - 0.5  # the oldest batch left
                plans.append(
                    (
                        "bulk delete",
                        lambda days=days: preview_delete_runs(
                            ws, status="completed", older_than_days=days
                        ),
                    )
                )
            plans += [
                ("rewind target", lambda: preview_rewind(ws, "target", keep)),
                ("trim target", lambda: preview_trim(ws, "target", keep_chars=100)),
                ("rewind neighbour", lambda: preview_rewind(ws, "neighbour", half)),
                (
                    "rewind neighbour's last turn",
                    lambda: preview_rewind(ws, "neighbour", last_turn),
                ),
            ]
            for name, make in plans:
                if stop.wait(gap):  # bounded: the pace of the actions
                    break
                try:
                    result = await perform(ws, await make())
                except ActionError as exc:
                    if "changed since the preview" not in str(exc):
                        raise
                    refused += 1
                    continue
                if result.journal_id is None:
                    continue
                held.setdefault(name, []).append(result.held_ms)
                if name.startswith("rewind neighbour"):
                    if stop.wait(gap):  # bounded: the pace of the actions
                        break
                    await undo(ws, result.journal_id)
                    undone += 1
    finally:
        await ws.close()
    return {
        "rounds": rounds,
        "refused_rows_moved_on": refused,
        "neighbour_rewinds_undone": undone,
        **{
            f"{action} held ms": {
                "done": len(times),
                "p50": round(percentile(times, 50), 2) if times else None,
                "max": round(max(times), 2) if times else None,
            }
            for action, times in held.items()
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=2_000)
    parser.add_argument("--checkpoints", type=int, default=200)
    parser.add_argument("--gap", type=float, default=0.25)
    parser.add_argument(
        "--appends",
        type=int,
        default=200,
        help="the writer's appends, alone and beside (more: more actions measured)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lovia-tui-actions-") as directory:
        os.environ["LOVIA_TUI_JOURNAL"] = str(Path(directory) / "journal.db")
        path = Path(directory) / "bench.db"
        asyncio.run(seed(path, args.segments, args.checkpoints))
        alone = run_writer(str(path), "target", args.appends)
        stop = threading.Event()
        outcome: dict = {}

        def actions() -> None:
            outcome.update(asyncio.run(act_until(path, stop, args.gap)))

        actor = threading.Thread(target=actions)
        actor.start()
        try:
            beside = run_writer(str(path), "target", args.appends)
        finally:
            stop.set()
            actor.join()
    latencies = append_latencies(alone, beside)
    result = {
        "segments": args.segments,
        "bulk_delete_checkpoints": args.checkpoints,
        "gap_s": args.gap,
        **latencies,
        "budget_ok": latencies["beside_p99_ms"] <= latencies["alone_p99_ms"] + 50,
        "actions": outcome,
    }
    (HERE / "results").mkdir(exist_ok=True)
    out = HERE / "results" / f"actions-{args.segments}-gap{args.gap:g}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print(f"load: {os.getloadavg()}")
    for measure in measures(result):
        print(measure.line())


def measures(result: dict) -> list[Measure]:
    """The printed lines: value, floor, ratio and budget of each measure."""
    alone, beside = result["alone_p99_ms"], result["beside_p99_ms"]
    held = [
        numbers["max"]
        for name, numbers in result["actions"].items()
        if name.endswith("held ms") and numbers["max"] is not None
    ]
    longest = max(held, default=0.0)
    return [
        Measure("A1", f"writer append p99 beside actions, {result['segments']:,} runs",
                "ms", beside, alone, "≤ floor + 50 ms", beside <= alone + 50),
        Measure("A2", "write lock held by an action, longest", "ms", longest, None,
                "≤50 ms", longest <= 50),
    ]  # fmt: skip


if __name__ == "__main__":
    main()
