"""Rewind, fork, trim, clear, delete, finalize and undo from the inspector.

A part of the inspector. Every action goes: preview (core) → dialog with
exactly what will be removed → confirm → ``perform`` through lovia, journaled
first → every view refreshed. A live run is refused unless the user types
its id to force it.

The core's action modules are imported on first use: the first frame of the
app does not need them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from textual import work

from lovia_tui.core.errors import ActionError, LiveRunError, RowsChangedError
from lovia_tui.screens.inspector_base import Build, InspectorBase
from lovia_tui.view.kinds import Group

if TYPE_CHECKING:
    from lovia_tui.core.actions.fork import ForkPreview, ForkResult
    from lovia_tui.core.actions.perform import ActionResult
    from lovia_tui.core.actions.previews import Preview
    from lovia_tui.screens.action_dialog import FormField

FORK_INSTEAD = "Fork instead (keeps this session)"


def _int(values: dict[str, str], name: str, default: int) -> int:
    text = values.get(name, "").strip()
    return int(text) if text.isdigit() else default


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(
        f"{count} {what.replace('_', ' ')}" for what, count in counts.items()
    )


class ActionFlows(InspectorBase):
    """The destructive actions; all of them hidden in read-only mode."""

    def action_rewind_here(self) -> None:
        from lovia_tui.core.actions.session_plans import preview_rewind

        selection = self.selection
        index, key = selection.entry_index, selection.session
        if index is not None and key is not None:
            sid = key[1]
            self.action_flow(
                f"Rewind {sid} to before entry {index}",
                lambda values, force: preview_rewind(
                    self.workspace,
                    sid,
                    index,
                    force=force,
                    stale_after=self.stale_after,
                ),
                fork_instead=(sid, index),
            )

    def action_fork_here(self) -> None:
        selection = self.selection
        index, key = selection.entry_index, selection.session
        if index is not None and key is not None:
            self._fork(key[1], index)

    def _fork(self, sid: str, index: int) -> None:
        """Fork the session before entry ``index`` (a web chat: before its user turn)."""
        from lovia_tui.core.actions.fork import fork_point, preview_fork

        async def build(values: dict[str, str], force: bool) -> ForkPreview:
            keep = await fork_point(self.workspace, sid, index)
            return await preview_fork(self.workspace, sid, keep)

        self.action_flow(f"Fork {sid} before entry {index} (nothing is removed)", build)

    def action_rewind_turn(self) -> None:
        from lovia_tui.core.actions.session_plans import preview_rewind, user_turn_start

        selection = self.selection
        index, key = selection.entry_index, selection.session
        if index is not None and key is not None:
            sid = key[1]

            async def build(values: dict[str, str], force: bool) -> Preview:
                keep = await user_turn_start(self.workspace, sid, index)
                return await preview_rewind(
                    self.workspace, sid, keep, force=force, stale_after=self.stale_after
                )

            self.action_flow(
                f"Rewind {sid} to before this user turn (edit and resend)",
                build,
                fork_instead=(sid, index),
            )

    def action_trim(self) -> None:
        from lovia_tui.core.actions.session_plans import preview_trim
        from lovia_tui.screens.action_dialog import FormField

        key = self.selection.session
        if key is None:
            return
        sid = key[1]
        fields = [
            FormField("keep_chars", "Keep characters of each old output", "400"),
            FormField("keep_runs", "Keep the last N runs untouched", "1"),
        ]
        self.action_flow(
            f"Trim tool outputs of {sid}",
            lambda values, force: preview_trim(
                self.workspace,
                sid,
                _int(values, "keep_chars", 400),
                _int(values, "keep_runs", 1),
            ),
            fields,
        )

    def action_clear_session(self) -> None:
        from lovia_tui.core.actions.session_plans import preview_clear

        key = self.selection.session
        if key is None:
            return
        sid = key[1]
        self.action_flow(
            f"Clear session {sid}",
            lambda values, force: preview_clear(
                self.workspace, sid, force=force, stale_after=self.stale_after
            ),
        )

    def action_delete_run(self) -> None:
        from lovia_tui.core.actions.run_plans import preview_delete_runs

        run = self.selection.run
        if run is not None:
            self.action_flow(
                f"Delete the checkpoint of run {run.run_id}",
                lambda values, force: preview_delete_runs(
                    self.workspace,
                    [run.run_id],
                    force=force,
                    stale_after=self.stale_after,
                ),
            )

    def action_delete_runs_by_filter(self) -> None:
        from lovia_tui.core.actions.run_plans import preview_delete_runs
        from lovia_tui.core.run_status import STATUS_FILTERS
        from lovia_tui.screens.action_dialog import FormField

        fields = [
            FormField("status", "Status", "interrupted", STATUS_FILTERS),
            FormField("days", "Older than (days, empty for any age)", ""),
        ]

        def build(values: dict[str, str], force: bool) -> Awaitable[Preview]:
            days = values.get("days", "").strip()
            return preview_delete_runs(
                self.workspace,
                status=values.get("status") or "interrupted",
                older_than_days=float(days)
                if days.replace(".", "", 1).isdigit()
                else None,
                force=force,
                stale_after=self.stale_after,
            )

        self.action_flow("Delete checkpoints by status and age", build, fields)

    def action_finalize(self) -> None:
        from lovia_tui.core.actions.run_plans import preview_finalize
        from lovia_tui.screens.action_dialog import FormField

        run = self.selection.run
        if run is None:
            return
        linked = self.runs.links.get(run.run_id)
        fields = (
            []
            if linked
            else [
                FormField(
                    "session",
                    "Session (your choice: nothing links this run to one)",
                    "",
                    tuple(key[1] for key in self.sessions.keys),
                )
            ]
        )

        def build(values: dict[str, str], force: bool) -> Awaitable[Preview]:
            return preview_finalize(
                self.workspace,
                run.run_id,
                values.get("session") or None,
                force=force,
                stale_after=self.stale_after,
            )

        self.action_flow(f"Finalize run {run.run_id} into its session", build, fields)

    @work(exclusive=True, group=Group.ACTION)
    async def action_flow(
        self,
        title: str,
        build: Build,
        fields: Sequence[FormField] = (),
        *,
        fork_instead: tuple[str, int] | None = None,
    ) -> None:
        """Preview, confirm (or preview again with new options), perform, refresh.

        Rows that moved on between the preview and Confirm (an agent appended
        meanwhile) refuse the action; the new preview is shown to confirm again.
        ``fork_instead`` (a rewind's entry index) offers the non-destructive
        choice in the dialog: fork the session there instead.
        """
        from lovia_tui.core.actions.describe import describe
        from lovia_tui.core.actions.fork import ForkPreview, perform_fork
        from lovia_tui.core.actions.perform import perform
        from lovia_tui.screens.action_dialog import (
            ActionScreen,
            ForceScreen,
            FormField,
            confirm_token,
        )

        values = {spec.name: spec.value for spec in fields}
        force = False
        preview: Preview | ForkPreview | None = None
        while True:
            try:
                built = await build(values, force)
            except LiveRunError as exc:
                token = str(exc).split()[1] if str(exc).startswith("run ") else "force"
                if not force and await self.app.push_screen_wait(
                    ForceScreen(str(exc), token)
                ):
                    force = True
                    continue
                return
            except ActionError as exc:
                if (
                    fields
                    and any(spec.choices for spec in fields)
                    and not all(values.values())
                ):
                    preview = None
                    lines = [title, str(exc)]
                else:
                    self.notify(str(exc), severity="error")
                    return
            else:
                preview, lines = built, describe(built)
            shown = [
                FormField(
                    spec.name,
                    spec.label,
                    values.get(spec.name, spec.value),
                    spec.choices,
                )
                for spec in fields
            ]
            answer = await self.app.push_screen_wait(
                ActionScreen(
                    title,
                    lines,
                    noop=preview is None or preview.noop,
                    fields=shown,
                    token=confirm_token(preview) if preview else None,
                    alternative=None if fork_instead is None else FORK_INSTEAD,
                )
            )
            if answer is not None and answer.alternative and fork_instead:
                self._fork(*fork_instead)
                return
            if answer is None:
                return
            if not answer.confirm or answer.values != values:
                values = answer.values
                continue
            if preview is None:  # a dialog with nothing to do offers no Confirm
                return
            result: ActionResult | ForkResult
            try:
                if isinstance(preview, ForkPreview):
                    result = await perform_fork(
                        self.workspace, preview, reason=answer.reason
                    )
                else:
                    result = await perform(
                        self.workspace, preview, reason=answer.reason
                    )
            except RowsChangedError:
                self.notify(
                    "the rows moved on since the preview, nothing was done: "
                    f"here is the {preview.action} as it would be now",
                    severity="warning",
                )
                continue
            except ActionError as exc:
                self.notify(str(exc), severity="error")
                return
            break
        self.notify(
            f"{preview.action}: {_counts(result.counts) or 'done'} (journal #{result.journal_id}; u undoes it)"
        )
        for warning in result.warnings:
            self.notify(warning, severity="warning")
        self.action_refresh()

    @work(exclusive=True, group=Group.ACTION)
    async def action_undo(self, entry_id: int | None = None) -> None:
        """Undo an action (the newest on the open files), after saying what it was."""
        from lovia_tui.core.actions.journal import Journal
        from lovia_tui.core.actions.perform import undo
        from lovia_tui.screens.action_dialog import ActionScreen

        journal = Journal()
        files = [db.path for db in self.workspace.databases]
        try:
            entry = (
                await journal.get(entry_id)
                if entry_id is not None
                else await journal.last_undoable([Path(f).resolve() for f in files])
            )
        except ActionError as exc:
            self.notify(str(exc), severity="error")
            return
        if entry is None:
            self.notify("nothing to undo in the journal for these files")
            return
        what = f"{entry.action} of {entry.subject}" if entry.subject else entry.action
        lines = [
            f"undo journal entry #{entry.id}: {what} by {entry.user}",
            (
                "it never finished (interrupted): puts back the journaled rows now "
                "missing or altered, leaves the others as they are"
                if entry.unfinished
                else f"restores the rows exactly as they were before it ({_counts(entry.counts)})"
            ),
            "refused if anything changed those rows since",
        ]
        answer = await self.app.push_screen_wait(
            ActionScreen(f"Undo {entry.action}", lines, noop=False, ask_reason=False)
        )
        if answer is None or not answer.confirm:
            return
        try:
            result = await undo(self.workspace, entry.id, journal)
        except ActionError as exc:
            self.notify(str(exc), severity="error")
            return
        in_place = (
            f"; {result.rows_in_place} were already in place"
            if entry.unfinished and result.rows_in_place
            else ""
        )
        self.notify(
            f"undone: journal #{entry.id} ({result.rows_restored} rows restored{in_place})"
        )
        self.action_refresh()
