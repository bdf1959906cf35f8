"use strict";
// The players' flashboard: the current call, the game (pattern, prize, balls called, the last five), whether a
// claim is being checked and how it was ruled, and the lit board; large type for the back of the hall.

(() => {
  const $ = (id) => document.getElementById(id);
  const say = Board.announcer($("announce-calls"));
  let version = -1;

  function chip(text, className) {
    const li = document.createElement("li");
    li.textContent = text;
    if (className) li.className = className;
    return li;
  }

  function render(s) {
    if (s.version < version) return;
    version = s.version;
    const current = $("flash-current");
    current.textContent = s.current || "\u2013";
    current.setAttribute("aria-label", s.current ? "Current call " + Board.spoken(s.current) : "No call yet");
    const g = s.game;
    $("flash-game").textContent = g ? "Game " + g.number : "No game yet";
    $("flash-pattern").textContent = g && g.pattern ? g.pattern : "";
    $("flash-prize").textContent = g && g.prize ? "Prize $" + Number(g.prize).toLocaleString("en-US") : "";
    $("flash-plan").hidden = !(g && (g.pattern || g.prize));
    $("flash-count").textContent = String(s.count);
    $("flash-count-word").textContent = s.count === 1 ? "ball called" : "balls called";
    $("flash-last").replaceChildren(
      ...(s.last.length ? s.last.map((b, i) => chip(b, i === 0 ? "newest" : "")) : [chip("none yet", "empty")]),
    );
    const status = $("flash-status");
    status.textContent = s.status.text;
    status.dataset.phase = s.status.phase;
    Board.render($("flash-board"), s);
    document.body.dataset.version = String(s.version);
    document.body.dataset.phase = s.status.phase;
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
