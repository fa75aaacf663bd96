"""The browser side of following a class: a component that draws nothing, asks the server for the class's version
with a long poll (attnviz/app/classroom/follow.py), and asks Streamlit for a rerun only when the version changed.

A waiting browser holds one HTTP request open and costs the server no script run; a change reaches it within the
server's poll of the store (0.2 s) plus its rerun. A failed request (a replica gone, the store unreachable) is tried
again after a growing pause, at most 10 s, and the proxy sends it to a replica that answers. The component also sets
the cookie that lets a reloaded or reconnected page keep its place in the class (`cookie`, written by live.py).

One loop per follow URL and tab, however often the component is drawn again; it stops when the component is gone
(the student left the class). The JavaScript is the app's own constant, never built from user input: the URL and
the cookie are data, and the cookie's value is made of the class code and a random token only.
"""

from __future__ import annotations

import streamlit as st

from attnviz.app.classroom.follow import ROUTE
from attnviz.app.streamlit_patches.routes import full_path
from attnviz.app.ui import live_sync

FOLLOW_KEY = "attnviz_live_follow"
EVENT = "changed"  # the trigger's name: its value is the class's new version (-1: the class ended)

JS = """
const loops = new Map();  // follow URL -> its loop (one per tab, however often the component is drawn)
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function follow(loop) {
  let failures = 0;
  while (loop.mounted > 0) {
    let answer = null;
    try {
      const asked = `${loop.url}?after=${loop.known}`;
      const response = await fetch(asked, { cache: "no-store", credentials: "same-origin" });
      if (response.status === 404) answer = { ended: true };
      else if (response.ok) answer = await response.json();
    } catch (error) {
      answer = null;
    }
    if (loop.mounted <= 0) break;
    if (answer === null || answer.unavailable) {
      failures += 1;
      if (answer !== null && !loop.away) {
        loop.away = true;  // the store is away: the page runs once to say so, and again when it is back
        loop.trigger("changed", loop.known);
      }
      await sleep(Math.min(10000, 250 * 2 ** Math.min(failures, 6)));
      continue;
    }
    failures = 0;
    const version = answer.ended ? -1 : answer.version;
    if (version !== loop.known || loop.away) {
      loop.away = false;
      loop.known = version;
      loop.trigger("changed", version);
      if (version === -1) break;
    }
  }
  loop.running = false;
}

function toTop() {
  // a page the class moved to opens at its title, not where the last page was scrolled to
  window.scrollTo(0, 0);
  for (const box of document.querySelectorAll('[data-testid="stMain"], [data-testid="stAppViewContainer"]')) {
    box.scrollTop = 0;
  }
}

export default function (component) {
  const { data, setTriggerValue } = component;
  if (data.cookie) {
    document.cookie = data.cookie + (location.protocol === "https:" ? "; Secure" : "");
  }
  if (!data.url) return;
  let loop = loops.get(data.url);
  if (!loop) {
    loop = { url: data.url, known: data.version, mounted: 0, running: false, away: false, trigger: null,
             page: data.page };
    loops.set(data.url, loop);
  }
  if (data.page !== loop.page) {
    loop.page = data.page;
    toTop();
  }
  loop.known = data.version;
  loop.trigger = setTriggerValue;
  loop.mounted += 1;
  if (!loop.running) {
    loop.running = true;
    follow(loop);
  }
  return () => {
    loop.mounted -= 1;
  };
}
"""

_component = st.components.v2.component("attnviz_live_follow", js=JS)


def follow_url(follow_id: str) -> str:
    """Where a browser asks for the version of the class with this follow id."""
    return full_path(ROUTE.format(follow_id=follow_id))


def follow_class(follow_id: str | None, version: int, page: str, cookie: str = "") -> None:
    """Mount the follower (it shows nothing) on `page`: it reruns the page when the class's version is no longer
    `version`, and scrolls a page the class moved to up to its title. Without a follow id it only sets `cookie`. Its
    trigger reruns the whole page; drawn in a page's fragment, that fragment alone, which takes a change of its own
    controls by itself (live_sync.newer_in_fragment) and reruns the whole page for anything else."""
    _component(
        key=FOLLOW_KEY,
        data={"url": follow_url(follow_id) if follow_id else "", "version": version, "page": page, "cookie": cookie},
        height=0,
        **{f"on_{EVENT}_change": _rerun_is_all},
    )


def _rerun_is_all() -> None:
    """The trigger's callback: the rerun it sets off is the follower's (live_sync.newer_in_fragment reads it)."""
    live_sync.followed()
