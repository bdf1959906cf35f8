"use strict";
// The players' flashboard: the current call and the lit board, large numbers only.

(() => {
  const $ = (id) => document.getElementById(id);
  const say = Board.announcer($("announce-calls"));
  let version = -1;

  function render(s) {
    if (s.version < version) return;
    version = s.version;
    const current = $("flash-current");
    current.textContent = s.current || "\u2013";
    current.setAttribute("aria-label", s.current ? "Current call " + Board.spoken(s.current) : "No call yet");
    $("flash-count").textContent = String(s.count);
    const g = s.game;
    $("flash-game").textContent = g ? "Game " + g.number + (g.pattern ? " \u00b7 " + g.pattern : "") : "";
    Board.render($("flash-board"), s);
    document.body.dataset.version = String(s.version);
  }

  Board.build($("flash-board"), null);
  Board.connect(
    "/api/flashboard/live",
    (message, fresh) => {
      if (fresh) version = -1;
      render(message.state);
      say(message.events.filter((e) => e.kind === "call").map((e) => Board.spoken(e.ball)).join(". "));
    },
    () => {},
  );
})();
