#!/usr/bin/env python3
"""Turns a `tmux capture-pane -e` dump (ANSI SGR colours) into an HTML page, so headless
Chromium can take a picture of a terminal screen:
    scripts/ansi-to-html.py screen.ansi > screen.html
    chromium --headless=new --no-sandbox --screenshot=screen.png --window-size=W,H file://$PWD/screen.html
"""
import html
import re
import sys

PALETTE16 = ["#000", "#c33", "#3a3", "#c93", "#36c", "#a3a", "#3aa", "#ccc",
             "#666", "#f55", "#5d5", "#fd5", "#58f", "#d5d", "#5dd", "#fff"]


def colour256(n):
    if n < 16:
        return PALETTE16[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return "#%02x%02x%02x" % (steps[n // 36], steps[(n // 6) % 6], steps[n % 6])
    grey = 8 + (n - 232) * 10
    return "#%02x%02x%02x" % (grey, grey, grey)


def convert(text):
    out = []
    state = {}
    for part in re.split(r"(\x1b\[[0-9;]*m)", text):
        if part.startswith("\x1b["):
            codes = [int(c) if c else 0 for c in part[2:-1].split(";")]
            i = 0
            while i < len(codes):
                c = codes[i]
                if c == 0:
                    state = {}
                elif c == 1:
                    state["bold"] = True
                elif c == 2:
                    state["dim"] = True
                elif c == 3:
                    state["italic"] = True
                elif c == 7:
                    state["reverse"] = True
                elif c == 22:
                    state.pop("bold", None); state.pop("dim", None)
                elif c == 23:
                    state.pop("italic", None)
                elif c == 27:
                    state.pop("reverse", None)
                elif c == 39:
                    state.pop("fg", None)
                elif c == 49:
                    state.pop("bg", None)
                elif 30 <= c <= 37:
                    state["fg"] = PALETTE16[c - 30]
                elif 90 <= c <= 97:
                    state["fg"] = PALETTE16[c - 90 + 8]
                elif c in (38, 48) and i + 2 < len(codes) and codes[i + 1] == 5:
                    state["fg" if c == 38 else "bg"] = colour256(codes[i + 2])
                    i += 2
                i += 1
            continue
        if not part:
            continue
        fg, bg = state.get("fg", "#ddd"), state.get("bg", "transparent")
        if state.get("reverse"):
            fg, bg = (state.get("bg") or "#1e1e1e"), state.get("fg", "#ddd")
        style = "color:%s;background:%s;" % (fg, bg)
        if state.get("bold"):
            style += "font-weight:bold;"
        if state.get("dim"):
            style += "opacity:.6;"
        if state.get("italic"):
            style += "font-style:italic;"
        out.append('<span style="%s">%s</span>' % (style, html.escape(part)))
    return "".join(out)


if __name__ == "__main__":
    body = convert(open(sys.argv[1], encoding="utf-8").read().rstrip("\n"))
    print('<!doctype html><meta charset="utf-8"><body style="margin:0;background:#1e1e1e">'
          '<pre style="margin:0;padding:8px;font:14px/1.25 \'DejaVu Sans Mono\',monospace;color:#ddd">%s</pre>' % body)
