"""Checks the DOM headless chromium dumped from report.html against profile.json.

usage: check_report_dom.py DOM.html profile.json [sorted-column]
The page's script ran (body data-js="ready"), the overview shows the
profile's numbers, the op table has a row per folded op (sorted by the
column given in the URL, largest first), the roofline SVG has its roofs and
one point per folded op with FLOPs and HBM bytes, the memory chart is there.
"""
import html.parser
import json
import sys


class Dom(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack, self.by_id, self.elements = [], {}, []
        self.text_of = {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        el = {"tag": tag, "attrs": a, "text": "", "parents": [e["tag"] for e in self.stack]}
        el["ids"] = [e["attrs"].get("id") for e in self.stack if e["attrs"].get("id")]
        self.elements.append(el)
        if "id" in a:
            self.by_id[a["id"]] = el
        if tag not in ("br", "img", "meta", "input", "link", "hr"):
            self.stack.append(el)

    def handle_endtag(self, tag):
        while self.stack:
            el = self.stack.pop()
            if el["tag"] == tag:
                break

    def handle_data(self, data):
        for el in self.stack:
            el["text"] += data


def fail(msg):
    print("check_report_dom: " + msg)
    sys.exit(1)


dom = Dom()
dom.feed(open(sys.argv[1], encoding="utf-8").read())
profile = json.load(open(sys.argv[2]))
sort_col = int(sys.argv[3]) if len(sys.argv) > 3 else None

body = [e for e in dom.elements if e["tag"] == "body"]
if not body or body[0]["attrs"].get("data-js") != "ready":
    fail("the page's script did not run to the end (no data-js=ready on body)")

ov = profile["overview"]
want = "%.3f us" % (ov["step_seconds"] * 1e6)
got = dom.by_id.get("ov-step-us", {}).get("text", "").strip()
if got != want:
    fail("step time shows %r, profile.json says %r" % (got, want))
want = "%.1f%%" % (100 * ov["mxu_utilization"])
got = dom.by_id.get("ov-mxu", {}).get("text", "").strip()
if got != want:
    fail("MXU utilization shows %r, profile.json says %r" % (got, want))
for needed in ("ov-flops", "ov-hbm", "findings", "op-profile", "memory-chart", "roofline"):
    if needed not in dom.by_id:
        fail("no element #" + needed)

folds = [e for e in dom.elements if e["tag"] == "tr" and "fold" in e["attrs"].get("class", "")]
if len(folds) != len(profile["folded"]):
    fail("%d folded rows in the table, %d in profile.json" % (len(folds), len(profile["folded"])))
if sort_col is not None:
    table = dom.by_id["ops"]["attrs"]
    if table.get("data-col") != str(sort_col) or table.get("data-dir") != "desc":
        fail("the table was not sorted by column %d (data-col=%r)" % (sort_col, table.get("data-col")))
    # Within each category, folded rows are in descending order of that column.
    cells = [e for e in dom.elements if e["tag"] == "td" and "data-v" in e["attrs"]]
    rows = {}
    for e in dom.elements:
        if e["tag"] == "tr":
            current = e
        elif e["tag"] == "td" and "fold" in current["attrs"].get("class", ""):
            rows.setdefault(id(current), (current, []))[1].append(e)
    by_cat = {}
    for row, tds in rows.values():
        by_cat.setdefault(row["attrs"]["data-cat"], []).append(float(tds[sort_col]["attrs"]["data-v"]))
    for cat, values in by_cat.items():
        if values != sorted(values, reverse=True):
            fail("category %s is not sorted by column %d: %r" % (cat, sort_col, values))

points = [e for e in dom.elements
          if e["tag"] == "circle" and "roofline" in e["ids"] and "op-point" in e["attrs"].get("class", "")]
want = sum(1 for f in profile["folded"] if f["flops"] > 0 and f["hbm_bytes"] > 0 and f["cycles"] > 0)
if len(points) != want:
    fail("%d roofline points, %d folded ops with FLOPs and HBM bytes" % (len(points), want))
for roof in ("roof-mxu-hbm", "roof-vpu-hbm", "roof-mxu-vmem"):
    if roof not in dom.by_id:
        fail("the roofline has no " + roof)
print("report DOM ok: %d folded rows, %d roofline points" % (len(folds), len(points)))
