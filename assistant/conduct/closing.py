"""B(4), B(9): after a valid bingo no ball is called; "are there any other bingos?", then "this game is completed"."""

from __future__ import annotations

from .core import ConductCore


class Closing(ConductCore):
    """The game after a valid bingo: B(4) no new ball, B(9) the question and the completion, in the rule's words."""

    def call_after_valid_claim(self) -> None:
        """B(4): after a valid bingo the game is over: no new ball."""
        ball = self._ball()
        if ball not in self.state.board.called:
            self.find("call-after-valid-claim", ball=ball)

    def note_other_bingos_asked(self) -> None:
        """B(9): "are there any other bingos?" in those words."""
        if self.state.now.meaning is not None and self.state.now.meaning.intent == "other-bingos-paraphrase":
            self.find("other-bingos-paraphrased", since=self.state.now.time)  # the exact words may be in unsure speech
        self.state.game.asked_other = True
        self._cancel("ask-other")
        self._due("announce-completed", self.settings.answer_window)

    def complete_game(self) -> None:
        """B(9): "this game is completed", after "are there any other bingos?" when the game was won."""
        if self.state.game.won:
            if not self.state.game.asked_other:
                self.find("other-bingos-not-asked", since=self.state.game.won_at)
                self.prompt("ask-other-bingos")  # now, while the players can still answer
            if self.state.now.meaning is not None and self.state.now.meaning.intent.endswith("paraphrase"):
                self.find("game-completed-paraphrased", since=self.state.now.time)
        self._finish("completed")

    def _expired_ask_other(self) -> None:
        if self.state.phase == "closing":
            self.prompt("ask-other-bingos")

    def _expired_announce_completed(self) -> None:
        if self.state.phase == "closing":
            self.prompt("announce-completed")
