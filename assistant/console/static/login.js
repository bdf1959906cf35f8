"use strict";
// The login: name and password sent as JSON; the session comes back as an HttpOnly cookie.

(() => {
  const $ = (id) => document.getElementById(id);
  const next = new URLSearchParams(location.search).get("next") || "/";
  // only a path of this console, never another site
  const target = next.startsWith("/") && !next.startsWith("//") ? next : "/";

  $("login-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const status = $("login-status");
    status.textContent = "";
    try {
      const response = await fetch("/api/login", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ name: $("login-name").value, password: $("login-password").value }),
      });
      const answer = await response.json();
      if (!response.ok) {
        status.textContent = answer.error || "refused";
        $("login-password").value = "";
        $("login-password").focus();
        return;
      }
      location.assign(target);
    } catch (err) {
      status.textContent = "the console server is not answering";
    }
  });
  $("login-name").focus();
})();
