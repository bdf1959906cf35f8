"use strict";
// Shared by the master board and the flashboard: the 75-ball board, the live feed and the announcements.

const Board = (() => {
  const LETTERS = "BINGO";
  const SESSION_ENDED = 4401; // the live feed's close code when the page's session has ended

  function spoken(ball) {
    // "B7" -> "B 7": screen readers read it as a caller says it.
    return ball ? ball[0] + " " + ball.slice(1) : "";
  }

  function build(table, onPick) {
    table.textContent = "";
    const body = document.createElement("tbody");
    for (let row = 0; row < 5; row++) {
      const tr = document.createElement("tr");
      const th = document.createElement("th");
      th.scope = "row";
      th.textContent = LETTERS[row];
      tr.appendChild(th);
      for (let i = 1; i <= 15; i++) {
        const number = row * 15 + i;
        const td = document.createElement("td");
        td.id = "ball-" + LETTERS[row] + number;
        td.dataset.ball = LETTERS[row] + number;
        td.textContent = String(number);
        if (onPick) td.addEventListener("click", () => onPick(td.dataset.ball));
        tr.appendChild(td);
      }
      body.appendChild(tr);
    }
    table.appendChild(body);
  }

  function render(table, state) {
    const called = new Set(state.calls);
    for (const td of table.querySelectorAll("td[data-ball]")) {
      const ball = td.dataset.ball;
      const lit = called.has(ball);
      td.classList.toggle("lit", lit);
      td.classList.toggle("current", ball === state.current);
      td.setAttribute("aria-label", spoken(ball) + (lit ? ", called" : ", not called"));
    }
  }

  function announcer(region) {
    // Clear then set, so the same words twice in a row are still announced.
    let timer = null;
    return (text) => {
      if (!text) return;
      region.textContent = "";
      clearTimeout(timer);
      timer = setTimeout(() => { region.textContent = text; }, 60);
    };
  }

  function toLogin() {
    // the session ended (expired, logged out, user removed): back to the login, then here again
    location.assign("/login?next=" + encodeURIComponent(location.pathname));
  }

  function connect(path, onUpdate, onStatus) {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    const socket = new WebSocket(scheme + location.host + path);
    let fresh = true; // the first message of each connection is the whole state, even from a restarted server
    socket.onopen = () => onStatus("live");
    socket.onmessage = (event) => {
      onUpdate(JSON.parse(event.data), fresh);
      fresh = false;
    };
    socket.onclose = (event) => {
      if (event.code === SESSION_ENDED) {
        onStatus("logged out");
        toLogin();
        return;
      }
      onStatus("disconnected, reconnecting");
      setTimeout(() => connect(path, onUpdate, onStatus), 1000);
    };
    return socket;
  }

  function token() {
    // an action's one-time id (crypto.randomUUID needs https; getRandomValues does not)
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  return { LETTERS, spoken, build, render, announcer, connect, toLogin, token };
})();
