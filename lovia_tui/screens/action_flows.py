"""Rewind, fork, trim, clear, delete, finalize and undo: the flows the
inspector's keys and the doctor's fixes both go through.

Every action goes: preview (core) → dialog with exactly what will be
removed → confirm → ``perform`` through lovia, journaled first → ``on_done``
(the inspector re-reads every pane). A live run is refused unless the user
types its id to force it. :class:`ActionFlows` takes its target explicitly
(the :class:`~lovia_tui.view.selection.Selection`, a run, a doctor's preview) and
runs each flow in a worker of its host screen (group ``action``: one at a
time), which it returns so that a caller can wait for it.

The core's action modules are imported on first use: the first frame of the
app does not need them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING

from textual.screen import Screen
from textual.worker import Worker

from lovia_tui.core.errors import ActionError, LiveRunError, RowsChangedError
from lovia_tui.core.formatting import printable
from lovia_tui.core.models import SessionKey
from lovia_tui.core.store.workspace import Workspace
from lovia_tui.view.kinds import Group
from lovia_tui.view.selection import Selection

if TYPE_CHECKING:
    from lovia_tui.core.actions.fork import ForkPreview, ForkResult
    from lovia_tui.core.actions.perform import ActionResult
    from lovia_tui.core.actions.previews import Preview
    from lovia_tui.screens.action_dialog import FormField

Build = Callable[[dict[str, str], bool], Awaitable["Preview | ForkPreview"]]
"""An action's preview from the dialog's option values and whether to force."""

FORK_INSTEAD = "Fork (keeps this session)"


def _int(values: dict[str, str], name: str, default: int) -> int:
    text = values.get(name, "").strip()
    return int(text) if text.isdigit() else default


class ActionFlows:
    """The destructive actions (the inspector hides them in read-only mode)."""

    def __init__(
        self,
        host: Screen,
        workspace: Workspace,
        stale_after: float,
        on_done: Callable[[], object],
    ) -> None:
        self.host = host
        self.workspace = workspace
        self.stale_after = stale_after
        self.on_done = on_done
        """Called once an action or an undo changed the files."""

    def rewind_here(self, selection: Selection) -> None:
        from lovia_tui.core.actions.session_plans import preview_rewind

        index, key = selection.entry_index, selection.session
        if index is not None and key is not None:
            sid = key[1]
            self.flow(
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

    def fork_here(self, selection: Selection) -> None:
        index, key = selection.entry_index, selection.session
        if index is not None and key is not None:
            self._fork(key[1], index)

    def _fork(self, sid: str, index: int) -> None:
        """Fork the session before entry ``index`` (a web chat: before its user turn)."""
        from lovia_tui.core.actions.fork import fork_point, preview_fork

        async def build(values: dict[str, str], force: bool) -> ForkPreview:
            keep = await fork_point(self.workspace, sid, index)
            return await preview_fork(self.workspace, sid, keep)

        # Where it cuts is the preview's to say: a web chat forks before the
        # user turn, not at the cursor ("before entry 12" over a copy of 9).
        self.flow(f"Fork {sid} (nothing is removed)", build)

    def rewind_turn(self, selection: Selection) -> None:
        from lovia_tui.core.actions.session_plans import preview_rewind, user_turn_start

        index, key = selection.entry_index, selection.session
        if index is not None and key is not None:
            sid = key[1]

            async def build(values: dict[str, str], force: bool) -> Preview:
                keep = await user_turn_start(self.workspace, sid, index)
                return await preview_rewind(
                    self.workspace, sid, keep, force=force, stale_after=self.stale_after
                )

            self.flow(
                f"Rewind {sid} to before this user turn (edit and resend)",
                build,
                fork_instead=(sid, index),
            )

    def trim(self, selection: Selection) -> None:
        from lovia_tui.core.actions.trim_plan import preview_trim
        from lovia_tui.screens.action_dialog import FormField

        key = selection.session
        if key is None:
            return
        sid = key[1]
        fields = [
            FormField("keep_chars", "Keep characters of each old output", "400"),
            FormField("keep_runs", "Keep the last N runs untouched", "1"),
        ]
        self.flow(
            f"Trim tool outputs of {sid}",
            lambda values, force: preview_trim(
                self.workspace,
                sid,
                _int(values, "keep_chars", 400),
                _int(values, "keep_runs", 1),
                force=force,
                stale_after=self.stale_after,
            ),
            fields,
        )

    def clear_session(self, selection: Selection) -> None:
        from lovia_tui.core.actions.session_plans import preview_clear

        key = selection.session
        if key is None:
            return
        sid = key[1]
        self.flow(
            f"Clear session {sid}",
            lambda values, force: preview_clear(
                self.workspace, sid, force=force, stale_after=self.stale_after
            ),
        )

    def delete_run(self, selection: Selection) -> None:
        from lovia_tui.core.actions.run_plans import preview_delete_runs

        run = selection.run
        if run is not None:
            self.flow(
                f"Delete the checkpoint of run {run.run_id}",
                lambda values, force: preview_delete_runs(
                    self.workspace,
                    [run.run_id],
                    force=force,
                    stale_after=self.stale_after,
                ),
            )

    def delete_runs_by_filter(self) -> None:
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

        self.flow("Delete checkpoints by status and age", build, fields)

    def finalize(
        self,
        selection: Selection,
        linked: bool,
        sessions: list[SessionKey],
        keep_partial: bool = False,
    ) -> None:
        """Finalize the selected run (a web chat's as lovia web's Stop), or keep
        all it saved (``keep_partial``); ``linked``: a record says which
        session it belongs to, else the user picks one of ``sessions``."""
        from lovia_tui.core.actions.run_plans import preview_finalize

        run = selection.run
        if run is None:
            return
        fields = [] if linked else [session_choice(sessions)]

        def build(values: dict[str, str], force: bool) -> Awaitable[Preview]:
            return preview_finalize(
                self.workspace,
                run.run_id,
                values.get("session") or None,
                keep_partial=keep_partial,
                force=force,
                stale_after=self.stale_after,
            )

        title = (
            f"Keep all of run {run.run_id} in its session"
            if keep_partial
            else f"Finalize run {run.run_id}"
        )
        self.flow(title, build, fields)

    def flow(
        self,
        title: str,
        build: Build,
        fields: Sequence[FormField] = (),
        *,
        fork_instead: tuple[str, int] | None = None,
    ) -> Worker[None]:
        """Preview, confirm, perform through lovia (journaled), then ``on_done``."""
        return self.host.run_worker(
            partial(self._flow, title, build, fields, fork_instead),
            group=Group.ACTION,
            exclusive=True,
        )

    async def _flow(
        self,
        title: str,
        build: Build,
        fields: Sequence[FormField],
        fork_instead: tuple[str, int] | None,
    ) -> None:
        """Preview, confirm (or preview again with new options), perform, refresh.

        Rows that moved on between the preview and Confirm (an agent appended
        meanwhile) refuse the action; the new preview is shown to confirm again.
        ``fork_instead`` (a rewind's entry index) offers the non-destructive
        choice in the dialog: fork the session there instead.
        """
        from lovia_tui.core.actions.describe import describe
        from lovia_tui.core.actions.fork import ForkPreview, ForkResult, perform_fork
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
                if not force and await self.host.app.push_screen_wait(
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
                    self.host.notify(str(exc), severity="error")
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
            answer = await self.host.app.push_screen_wait(
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
                self.host.notify(
                    "the rows moved on since the preview, nothing was done: "
                    f"here is the {preview.action} as it would be now",
                    severity="warning",
                )
                continue
            except ActionError as exc:
                self.host.notify(str(exc), severity="error")
                return
            break
        from lovia_tui.core.actions.describe import counts_text

        into = (
            f" into {result.new_session_id}"
            if isinstance(result, ForkResult) and result.new_session_id
            else ""
        )
        self.host.notify(
            printable(
                f"{preview.action}{into}: {counts_text(result.counts) or 'done'} "
                f"(journal #{result.journal_id}; u undoes it)"
            ),
            markup=False,
        )
        for warning in result.warnings:
            self.host.notify(warning, severity="warning")
        self.on_done()

    def undo(self, entry_id: int | None = None) -> Worker[None]:
        """Undo a journaled action (the newest on the open files), after asking."""

        async def flow() -> None:
            # Imported on the first undo: the actions layer waits for one.
            from lovia_tui.screens.undo_flow import undo_flow

            if await undo_flow(self.host, self.workspace, entry_id):
                self.on_done()

        return self.host.run_worker(flow, group=Group.ACTION, exclusive=True)


def session_choice(sessions: list[SessionKey]) -> FormField:
    """The session a run nothing links to is finalized into: the user's pick,
    empty at first (the dialog shows the choice while a value is missing)."""
    from lovia_tui.screens.action_dialog import FormField

    return FormField(
        "session",
        "Session (your choice: nothing links this run to one)",
        "",
        tuple(key[1] for key in sessions),
    )
