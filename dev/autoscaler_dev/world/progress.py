"""How far each running scenario is, for a person watching ``autoscaler simulate``.

The runner hands a :class:`Progress` to its ``progress`` callback at every sample (30 virtual seconds); a display
turns the updates of one or more scenarios (several worker processes send theirs to the parent) into output:

- on a terminal (:class:`LiveProgress`, rich): one live line per scenario, and the timeline's happenings printed
  above the lines as they come;
- otherwise (:class:`LineProgress`: a log file, CI): one plain line per scenario per simulated minute.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import IO

from rich.console import Console, Group
from rich.live import Live
from rich.text import Text

from autoscaler_dev.world.timeline import Happening, grouped


def clock(t: float) -> str:
    """Virtual seconds as mm:ss; minutes keep counting past 59 because runs are short and hours would be noise."""
    seconds = max(0, int(t))
    return f"{seconds // 60:02d}:{seconds % 60:02d}"


@dataclass(frozen=True)
class Progress:
    """One scenario at one moment: what its live line shows, and the happenings since the last update."""

    scenario: str
    t: float
    duration: float
    pods_running: int
    pods_total: int
    pods_pending: int
    nodes: int
    nodes_spot: int
    cost_per_hour: float
    happenings: tuple[Happening, ...] = ()
    done: bool = False

    def line(self, width: int = 0) -> str:
        state = "done" if self.done else f"{clock(self.t)} / {clock(self.duration)}"
        return (
            f"{self.scenario.ljust(width)}  {state:>13}  pods {self.pods_running}/{self.pods_total} running"
            f" ({self.pods_pending} pending)  nodes {self.nodes} ({self.nodes_spot} spot)  ${self.cost_per_hour:.2f}/h"
        )

    def event_lines(self) -> list[str]:
        return [
            f"{self.scenario}  {clock(h.t)}  {h.what}  {h.subject}  {h.text}".rstrip() for h in grouped(self.happenings)
        ]


class LineProgress:
    """One line per scenario per simulated minute (and one when it is done), for output that is not a terminal."""

    shows_happenings = False  # the timeline is printed at the end instead

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self._minute: dict[str, int] = {}

    def update(self, progress: Progress) -> None:
        minute = int(progress.t // 60)
        if not progress.done and self._minute.get(progress.scenario) == minute:
            return
        self._minute[progress.scenario] = minute
        print(progress.line(), file=self.stream, flush=True)

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class LiveProgress:
    """One live line per scenario at the bottom of the terminal, the happenings scrolling above them."""

    shows_happenings = True  # the timeline was shown as it went

    def __init__(self, console: Console, scenarios: Iterable[str]) -> None:
        self.console = console
        self.lines: dict[str, Progress | None] = dict.fromkeys(scenarios)
        self._width = max((len(name) for name in self.lines), default=0)
        self.live = Live(self._render(), console=console, refresh_per_second=4, transient=False)

    def _render(self) -> Group:
        return Group(
            *(
                Text(p.line(self._width) if p else f"{name.ljust(self._width)}  starting", style="bold" if p else "dim")
                for name, p in self.lines.items()
            )
        )

    def update(self, progress: Progress) -> None:
        for line in progress.event_lines():
            self.live.console.print(Text(line, style="dim"))
        self.lines[progress.scenario] = progress
        self.live.update(self._render())

    def __enter__(self) -> LiveProgress:
        self.live.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.live.stop()


def display(stream: IO[str], scenarios: Iterable[str]) -> LiveProgress | LineProgress:
    """The live display on a terminal, lines otherwise."""
    console = Console(file=stream)
    return LiveProgress(console, scenarios) if console.is_terminal else LineProgress(stream)
