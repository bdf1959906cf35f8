"""B(4), B(9): after a valid bingo no ball is called; "are there any other bingos?", then "this game is completed"."""

from __future__ import annotations

from .core import ProcedureSettings, Windows, called_ball, check, expires
from .evidence import Evidence
from .occasion import Occasion
from .state import ConductState


class Closing:
    """The game after a valid bingo: B(4) no new ball, B(9) the question and the completion, in the rule's words.
    Reads the input in hand, the board, the game's `won` and `won_at`; writes the game's `asked_other`, the
    "ask-other" and "announce-completed" windows; closes the game (`Occasion.finish`)."""

    def __init__(
        self,
        state: ConductState,
        evidence: Evidence,
        windows: Windows,
        games: Occasion,
        settings: ProcedureSettings,
    ) -> None:
        self.state = state
        self.evidence = evidence
        self.windows = windows
        self.games = games
        self.settings = settings

    @check
    def call_after_valid_claim(self) -> None:
        """B(4): after a valid bingo the game is over: no new ball. Made from an absence: the caller's words that
        would have closed this game or opened the next were not heard since the bingo was found valid; unsure or
        unplaced speech of the caller there may have been them (a next game's "last ball called is required" heard
        unsure made its calls two false B(4) violations)."""
        ball = called_ball(self.state.now)
        if ball not in self.state.board.called:
            self.evidence.find("call-after-valid-claim", ball=ball, since=self.state.game.won_at)

    @check
    def note_other_bingos_asked(self) -> None:
        """B(9): "are there any other bingos?" in those words."""
        now = self.state.now
        if now.meaning is not None and now.meaning.intent == "other-bingos-paraphrase":
            self.evidence.find("other-bingos-paraphrased", since=now.time)  # the exact words may be in unsure speech
        self.state.game.asked_other = True
        self.windows.cancel("ask-other")
        self.windows.open("announce-completed", self.settings.answer_window)

    @check
    def complete_game(self) -> None:
        """B(9): "this game is completed", after "are there any other bingos?" when the game was won."""
        now = self.state.now
        game = self.state.game
        if game.won:
            if not game.asked_other:
                self.evidence.find("other-bingos-not-asked", since=game.won_at)
                self.evidence.prompt("ask-other-bingos")  # now, while the players can still answer
            if now.meaning is not None and now.meaning.intent.endswith("paraphrase"):
                self.evidence.find("game-completed-paraphrased", since=now.time)
        self.games.finish("completed")

    @expires("ask-other")
    def remind_other_bingos(self) -> None:
        """B(9): the window after the valid bingo closed without "are there any other bingos?"."""
        if self.state.phase == "closing":
            self.evidence.prompt("ask-other-bingos")

    @expires("announce-completed")
    def remind_completed(self) -> None:
        """B(9): the window after the question closed without "this game is completed"."""
        if self.state.phase == "closing":
            self.evidence.prompt("announce-completed")
