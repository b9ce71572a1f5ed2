#!/usr/bin/env python3
"""memdiff report from real recordings (ctest report_page, report_browser).

A timeline of timeline_target.c (mark "begin"; 64 MiB written; mark "allocated"; half of it
unmapped; mark "freed half"; an 8 MiB file mapped and read; mark "mapped file"; exit 7),
recorded through the library's API by report_record.c with a snapshot at each mark, is made
into a page and a chart by `memdiff report`. The known phases give exact figures: +16,384 pages
of 4 KiB private (67,108,864 bytes), then -8,192 (-33,554,432), then +2,048 pages of the file
(8,388,608 bytes, mapped-file).

  page     the page's embedded JSON and the SVG, without a browser; bad input (corrupt and cut
           files: exit 2 naming the record and offset), hostile labels, timelines with one
           snapshot and none
  browser  the same pages rendered by headless Chromium: the DOM after the scripts ran holds the
           series, points and the default diff; no script error; the screenshot is not blank.
           Skipped (exit 77) when no chromium is installed, unless MEMDIFF_REQUIRE_BROWSER=1
           (.ci/run). --screenshot PATH keeps the picture (docs/report.png is made so).
"""
import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zlib

MIB = 1 << 20
LABELS = ["begin", "allocated", "freed half", "mapped file"]
HOSTILE = "</script><script>document.body.setAttribute('data-pwned','1')</script>&<!--"
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(args, **kw):
    return subprocess.run(args, capture_output=True, timeout=240, **kw)


def embedded(html):
    """The page's JSON document, as the page's script reads it."""
    m = re.search(r'<script type="application/json" id="memdiff-data">(.*?)</script>', html, re.S)
    assert m, "no embedded data"
    return json.loads(m.group(1))


class Env:
    def __init__(self, a, tmp):
        self.a, self.tmp = a, tmp

    def path(self, name):
        return os.path.join(self.tmp, name)

    def phases(self):
        data = self.path("data.bin")
        with open(data, "wb") as f:
            f.write(os.urandom(8 * MIB))
        out = self.path("phases.mdt")
        r = run([self.a.record, "phases", out, self.a.target, data])
        assert r.returncode == 0, r.stderr.decode()
        return out

    def few(self, name, nsnaps, label):
        out = self.path(name)
        r = run([self.a.record, "few", out, str(nsnaps), label])
        assert r.returncode == 0, r.stderr.decode()
        return out

    def wss_profile(self):
        """wss.jsonl: 4 samples of a live process, as memdiff wss --profile --json writes them."""
        child = subprocess.Popen(["sleep", "60"])
        try:
            r = run([self.a.cli, "wss", str(child.pid), "--profile", "-i", "1ms", "-n", "4",
                     "--json"])
        finally:
            child.kill()
            child.wait()
        check(r.returncode == 0, "wss --profile: %s" % r.stderr.decode())
        open(self.path("wss.jsonl"), "wb").write(r.stdout)
        return self.path("wss.jsonl")

    def report(self, timeline, html=None, svg=None, extra=()):
        args = [self.a.cli, "report", timeline] + list(extra)
        if html:
            args += ["--html", html]
        if svg:
            args += ["--svg", svg]
        return run(args)


def check_phases_data(d):
    snaps = d["snapshots"]
    check(len(snaps) == 4, "4 snapshots, one per mark: %d" % len(snaps))
    check([m["label"] for m in d["marks"]] == LABELS, "marks: %r" % [m["label"] for m in d["marks"]])
    check(d["peak"] == 1, "the peak is the snapshot at 'allocated': %r" % d["peak"])
    check(sorted(d["diffs"]) == ["0-1", "0-2", "0-3", "1-2", "1-3", "2-3"],
          "every pair of 4 snapshots: %r" % sorted(d["diffs"]))
    cat = lambda i, c: snaps[i]["report"]["categories"][c]["resident_bytes"]
    check(cat(1, "private") - cat(0, "private") == 64 * MIB, "64 MiB private resident at 'allocated'")
    check(cat(2, "private") - cat(1, "private") == -32 * MIB, "half of it gone at 'freed half'")
    check(cat(3, "mapped-file") - cat(2, "mapped-file") == 8 * MIB, "the 8 MiB file at 'mapped file'")
    net = lambda p, c: d["diffs"][p]["categories"][c]["net_bytes"]
    check(net("0-1", "private") == 64 * MIB, "diff start->peak: private +64 MiB: %r" % net("0-1", "private"))
    check(net("1-2", "private") == -32 * MIB, "diff peak->freed: private -32 MiB")
    check(net("2-3", "mapped-file") == 8 * MIB, "diff freed->mapped: mapped-file +8 MiB")
    check(d["diffs"]["0-1"]["blocks"][0]["totals"]["new_bytes"] == 64 * MIB,
          "the largest block of start->peak is the 64 MiB")
    check(len(d["samples"]) > 4 and all(s[2] >= s[1] for s in d["samples"]),
          "polls, each VmHWM >= its VmRSS")
    check(max(s[2] for s in d["samples"]) >= 64 * MIB, "VmHWM holds the 64 MiB")


def part_page(env):
    tl = env.phases()
    html, svg = env.path("r.html"), env.path("r.svg")
    r = env.report(tl, html, svg)
    check(r.returncode == 0, "report exits 0: %s" % r.stderr.decode())
    page = open(html, encoding="utf-8").read()
    check_phases_data(embedded(page))
    check("http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
          and "https://" not in page and "src=" not in page, "the page loads nothing")

    # The SVG: well-formed, a point per snapshot with its exact figures, the marks' labels.
    root = ET.parse(svg).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    pts = [c for c in root.iter(ns + "circle") if "snap-point" in c.get("class", "")]
    check(len(pts) == 4, "4 snapshot points in the SVG: %d" % len(pts))
    if len(pts) == 4:
        check(int(pts[1].get("data-private")) - int(pts[0].get("data-private")) == 64 * MIB,
              "SVG point data: +64 MiB private")
        check(int(pts[3].get("data-mapped-file")) - int(pts[2].get("data-mapped-file")) == 8 * MIB,
              "SVG point data: +8 MiB mapped-file")
        check("peak" in pts[1].get("class"), "the peak point is marked")
    texts = ["".join(t.itertext()) for t in root.iter(ns + "text")]
    for label in LABELS:
        check(label in texts, "mark label %r drawn" % label)
    check({"private", "mapped-file"} <= set(texts), "bands named on the chart")
    series = {p.get("data-series") for p in root.iter(ns + "polyline")}
    check(series == {"vm_rss", "vm_hwm"}, "VmRSS and VmHWM lines: %r" % series)

    # Corrupt: one byte flipped inside a record -> exit 2, the record and offset named.
    raw = open(tl, "rb").read()
    bad = bytearray(raw)
    bad[len(raw) // 2] ^= 0xFF
    open(env.path("bad.mdt"), "wb").write(bad)
    r = env.report(env.path("bad.mdt"), env.path("bad.html"))
    err = r.stderr.decode()
    check(r.returncode == 2 and re.search(r"record \d+ .*at offset \d+", err),
          "corrupt timeline: exit 2 naming record and offset: %d %s" % (r.returncode, err))
    check(not os.path.exists(env.path("bad.html")), "nothing written for a corrupt timeline")
    # Cut inside its header: not a timeline.
    open(env.path("cut.mdt"), "wb").write(raw[:10])
    r = env.report(env.path("cut.mdt"), env.path("cut.html"))
    check(r.returncode == 2 and "header" in r.stderr.decode(), "cut in the header: exit 2")
    # Cut inside its last record (a recorder killed): the records before it, with a warning.
    open(env.path("torn.mdt"), "wb").write(raw[:-5])
    r = env.report(env.path("torn.mdt"), env.path("torn.html"))
    err = r.stderr.decode()
    check(r.returncode == 0 and re.search(r"ends inside record \d+ at offset \d+", err),
          "torn timeline: shown with a warning naming record and offset: %s" % err)
    if r.returncode == 0:
        d = embedded(open(env.path("torn.html"), encoding="utf-8").read())
        check(d["torn"] is True and d["torn_offset"] > 0, "the page knows it is torn")
    r = env.report(env.path("nothing-here.mdt"), env.path("x.html"))
    check(r.returncode == 2, "a missing file: exit 2")
    r = run([env.a.cli, "report", tl])
    check(r.returncode == 2 and b"--html" in r.stderr, "no output asked: usage error")
    r = env.report(tl, tl)
    check(r.returncode == 2 and os.path.getsize(tl) == len(raw), "never over the timeline")

    # A hostile label: nothing of it ends the script element or becomes markup.
    tl = env.few("hostile.mdt", 2, HOSTILE)
    r = env.report(tl, env.path("hostile.html"), env.path("hostile.svg"))
    check(r.returncode == 0, "hostile label: exit 0: %s" % r.stderr.decode())
    page = open(env.path("hostile.html"), encoding="utf-8").read()
    check(page.count("</script>") == 2, "only the page's two script elements end: %d"
          % page.count("</script>"))
    check(HOSTILE not in page and "<!--" not in page.split("<body>", 1)[1],
          "the label never appears raw")
    d = embedded(page)
    check([m["label"] for m in d["marks"]] == [HOSTILE], "the label is kept exactly in the data")
    check(d["argv"][1] == HOSTILE, "argv kept exactly in the data")
    ET.parse(env.path("hostile.svg"))  # well-formed with the label in it
    # Bytes that are no text: escaped as memdiff prints them (\xNN), not passed on.
    tl = env.few("bytes.mdt", 2, b"bad\x01\xff")
    r = env.report(tl, env.path("bytes.html"))
    d = embedded(open(env.path("bytes.html"), encoding="utf-8").read())
    check(d["marks"][0]["label"] == "bad\\x01\\xff", "invalid bytes escaped: %r" % d["marks"][0]["label"])

    env.wss_profile()
    r = env.report(env.path("phases.mdt"), env.path("wss.html"), extra=["--wss", env.path("wss.jsonl")])
    check(r.returncode == 0, "report --wss: %s" % r.stderr.decode())
    page = open(env.path("wss.html"), encoding="utf-8").read()
    wss = embedded(page)["wss"]
    lines = [json.loads(l) for l in open(env.path("wss.jsonl"))]
    check([w[3] for w in wss] == [l["referenced_bytes"] for l in lines],
          "the 4 samples' referenced bytes, exactly: %r" % wss)
    check(page.count('class="wss-point"') == 4, "4 points on the WSS chart")
    open(env.path("bad.jsonl"), "w").write('{"kind":"watch"}\n')
    r = env.report(env.path("phases.mdt"), env.path("x.html"), extra=["--wss", env.path("bad.jsonl")])
    check(r.returncode == 2 and b"line 1" in r.stderr, "a line that is no wss record: exit 2")

    # Over 40 snapshots: consecutive pairs and start, peak, end only, the page says so.
    tl = env.few("many.mdt", 41, "many")
    r = env.report(tl, env.path("many.html"))
    check(r.returncode == 0, "41 snapshots: exit 0")
    d = embedded(open(env.path("many.html"), encoding="utf-8").read())
    keys = {tuple(map(int, k.split("-"))) for k in d["diffs"]}
    consecutive = {(i, i + 1) for i in range(40)}
    ends = {(0, d["peak"]), (d["peak"], 40), (0, 40)} - {(0, 0), (40, 40)}
    check(keys == consecutive | ends, "41 snapshots: the diffs of consecutive pairs and of start, "
          "peak and end: %d pairs, extra %r" % (len(keys), sorted(keys - consecutive)))

    for n in (0, 1):
        tl = env.few("few%d.mdt" % n, n, "only")
        r = env.report(tl, env.path("few%d.html" % n), env.path("few%d.svg" % n))
        check(r.returncode == 0, "%d snapshots: exit 0" % n)
        d = embedded(open(env.path("few%d.html" % n), encoding="utf-8").read())
        check(len(d["snapshots"]) == n and d["diffs"] == {}, "%d snapshots, no diffs" % n)
        ET.parse(env.path("few%d.svg" % n))


def png_pixels(path):
    """(width, height, rows of RGB(A) tuples) of an 8-bit RGB or RGBA PNG, decoded here."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6), "8-bit RGB(A) only"
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, prev, rows = zlib.decompress(idat), w * bpp, bytearray(w * bpp), []
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def chromium():
    for name in ("chromium", "chromium-browser"):
        p = shutil.which(name)
        if p:
            return p
    return None


def browse(env, browser, html, what, shot=None):
    """Chromium's DOM after the page's scripts ran (and a screenshot), its stderr."""
    profile = tempfile.mkdtemp(dir=env.tmp)
    base = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0",
            "--window-size=1280,900"]
    url = "file://" + html
    r = run(base + ["--dump-dom", url])
    check(r.returncode == 0, "%s: chromium --dump-dom exits 0" % what)
    log = r.stderr.decode(errors="replace")
    # The page's console: an uncaught error or console.error shows as a CONSOLE line.
    console = [l for l in log.splitlines() if "CONSOLE" in l]
    check(not console, "%s: the console is quiet: %r" % (what, console))
    dom = r.stdout.decode()
    check('data-ready="1"' in dom, "%s: the script ran to its end" % what)
    check('class="script-error"' not in dom, "%s: no script error: %s" % (
        what, re.findall(r'class="script-error">([^<]*)', dom)))
    if shot:
        r = run(base + ["--screenshot=" + shot, url])
        check(r.returncode == 0 and os.path.exists(shot), "%s: screenshot taken" % what)
    return dom


def attrs(dom, tag, **want):
    """The attribute dicts of every <tag> whose attributes include want."""
    out = []
    for m in re.finditer(r"<%s\b([^>]*)>" % tag, dom):
        a = dict(re.findall(r'([\w-]+)="([^"]*)"', m.group(1)))
        if all(a.get(k.replace("_", "-")) == v for k, v in want.items()):
            out.append(a)
    return out


def part_browser(env, shot_keep):
    browser = chromium()
    if not browser:
        if os.environ.get("MEMDIFF_REQUIRE_BROWSER") == "1":
            print("FAIL: no chromium, and MEMDIFF_REQUIRE_BROWSER=1")
            return 1
        print("SKIP: no chromium installed (apt-get install chromium; .ci/run runs this test)")
        return 77
    tl = env.phases()
    html = env.path("r.html")
    r = env.report(tl, html, extra=["--wss", env.wss_profile()])
    check(r.returncode == 0, "report exits 0")
    shot = env.path("r.png")
    dom = browse(env, browser, html, "phases", shot)

    # The counts: 4 snapshots and 4 marks (one per mark), as many polls as the data holds.
    facts = attrs(dom, "p", id="facts")
    polls = len(embedded(open(html, encoding="utf-8").read())["samples"])
    check(facts and facts[0].get("data-snapshots") == "4" and facts[0].get("data-marks") == "4"
          and facts[0].get("data-samples") == str(polls) and polls > 4,
          "counts of the page: %r" % facts)
    # Snapshot rows: exact figures of the recorded snapshots.
    rows = [a for a in attrs(dom, "tr") if "data-snapshot" in a]
    check(len(rows) == 4, "4 snapshot rows: %d" % len(rows))
    if len(rows) == 4:
        check(int(rows[1]["data-private"]) - int(rows[0]["data-private"]) == 64 * MIB,
              "rows: +64 MiB private at 'allocated'")
        check(int(rows[3]["data-mapped-file"]) - int(rows[2]["data-mapped-file"]) == 8 * MIB,
              "rows: +8 MiB mapped-file at 'mapped file'")
        check(rows[1].get("class") == "peak-row", "the peak's row")
    check(len([a for a in attrs(dom, "circle") if "data-snapshot" in a]) == 4, "4 points")
    box = re.search(r'<div id="wss">(.*?)</div>', dom, re.S)
    check(box and len(re.findall(r'<tr data-referenced="\d+">', box.group(1))) == 4,
          "the WSS table: a row per sample")
    marks = re.findall(r'<tr data-mark="\d+"><td class="">[^<]*</td><td class="label">([^<]*)</td>', dom)
    check(marks == LABELS, "mark rows: %r" % marks)
    # The default pair, start -> peak, as memdiff diff: +64 MiB private, nothing else.
    check(attrs(dom, "section", id="compare-section")[0].get("data-pair") == "0-1",
          "default pair start->peak")
    priv = attrs(dom, "tr", data_category="private")
    check(priv and priv[0]["data-net"] == str(64 * MIB), "diff table: private +67,108,864: %r" % priv[:1])
    check(">+67,108,864<" in dom, "the figure as the page shows it")
    total = attrs(dom, "tr", data_category="total")
    check(total and int(total[0]["data-net"]) >= 64 * MIB, "diff total holds the 64 MiB")

    # A user's hover and clicks, made by the page's "#selftest" (a tooltip with the peak's
    # exact figures; the last two snapshots picked: the file's 8 MiB, mapped-file).
    dom = browse(env, browser, html + "#selftest", "hover and pick")
    tip = re.search(r'<div id="tooltip"[^>]*>(.*?)</div>', dom, re.S)
    peak = rows[1]["data-resident"] if len(rows) == 4 else "?"
    check(tip and "display: block" in tip.group(0) and
          "<td>resident</td><td>%s</td>" % "{:,}".format(int(peak)) in tip.group(1),
          "hovering the peak shows its resident bytes %s" % peak)
    check(attrs(dom, "section", id="compare-section")[0].get("data-pair") == "2-3",
          "two clicks pick the last two snapshots")
    mapped = attrs(dom, "tr", data_category="mapped-file")
    check(mapped and mapped[0]["data-net"] == str(8 * MIB), "their diff: mapped-file +8 MiB")

    w, h, bpp, px = png_pixels(shot)
    colours, ink = set(), 0
    for row in px:
        for x in range(0, w * bpp, bpp):
            p = row[x:x + 3]
            colours.add(p)
            ink += p != b"\xff\xff\xff"
    check(len(colours) >= 16, "the screenshot has colours: %d" % len(colours))
    check(ink > w * h // 10, "the screenshot is not blank: %d of %d pixels inked" % (ink, w * h))
    if shot_keep:
        shutil.copyfile(shot, shot_keep)

    # The hostile label is text in the page: nothing ran, the label reads as written.
    tl = env.few("hostile.mdt", 2, HOSTILE)
    env.report(tl, env.path("hostile.html"))
    dom = browse(env, browser, env.path("hostile.html"), "hostile label")
    check('data-pwned="1"' not in dom, "the label's script did not run")
    check(HOSTILE.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") in dom,
          "the label is shown as text")
    for n, cls in ((0, "no-snapshots"), (1, "one-snapshot")):
        tl = env.few("few%d.mdt" % n, n, "only")
        env.report(tl, env.path("few%d.html" % n))
        dom = browse(env, browser, env.path("few%d.html" % n), "%d snapshots" % n)
        check('class="%s"' % cls in dom, "%d snapshots: the page says so" % n)
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("part", choices=["page", "browser"])
    ap.add_argument("--cli", required=True)
    ap.add_argument("--record", required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("--screenshot", help="keep the phases page's screenshot here")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="memdiff-report-")
    try:
        env = Env(a, tmp)
        if a.part == "page":
            part_page(env)
        else:
            rc = part_browser(env, a.screenshot)
            if rc:
                return rc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("%d checks failed" % len(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
