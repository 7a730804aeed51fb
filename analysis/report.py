"""One page per set of logs: report.html (self-contained: images inline as
data URIs) and report.md (images beside it).  Everything that comes from a
log is HTML-escaped, since header strings are whatever the guest wrote."""

import base64
import html
import pathlib

import compare
import heatmap
import summary


def _esc(value):
    return html.escape(str(value), quote=True)


def _img(path):
    data = base64.b64encode(pathlib.Path(path).read_bytes()).decode()
    return f'<img alt="{_esc(path.name)}" src="data:image/png;base64,{data}">'


def _html_table(rows):
    head, *body = rows
    out = ["<table><tr>" + "".join(f"<th>{_esc(c)}</th>" for c in head) + "</tr>"]
    out += ["<tr>" + "".join(f"<td>{_esc(c)}</td>" for c in r) + "</tr>" for r in body]
    return "\n".join(out + ["</table>"])


def _md_cell(value):
    return str(value).replace("|", "\\|").replace("\n", " ")


def _md_table(rows):
    head, *body = rows
    lines = ["| " + " | ".join(_md_cell(c) for c in head) + " |",
             "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(_md_cell(c) for c in r) + " |"
                              for r in body])


def failure_rows(corr):
    rows = [["inode", "verdict ts (ns)", "cpu", "call", "window arrivals",
             "block completion cpu", "latency (ms)", "cross-CPU"]]
    known = corr.log.window_known()
    for f in corr.failures:
        b = f["block"]
        rows.append([f["ino"], f["ts"], f["cpu"],
                     f["call"]["caller"] if f["call"] else "-",
                     (", ".join(f"{w['source']} +{w['offset_ns']} ns" for w in
                                f["window_arrivals"]) or "none")
                     if known else "unknown (no window symbols)",
                     b["cpu"] if b else "-",
                     f"{b['latency_ns'] / 1e6:.3f}" if b else "-",
                     b["cross_cpu"] if b else "-"])
    return rows


def write(outdir, runs):
    """runs: [(path, log, corr)].  Writes outdir/report.{html,md}."""
    outdir = pathlib.Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    rows = [compare.row(p, log, corr) for p, log, corr in runs]
    compare.latency_plot(rows, outdir / "latency.png")
    verdict = compare.verdict(rows)
    ctable = compare.table(rows)
    h = ["<!DOCTYPE html><html><head><meta charset='utf-8'>",
         "<title>chkwin report</title><style>body{font-family:sans-serif;"
         "max-width:1150px;margin:auto}table{border-collapse:collapse}"
         "td,th{border:1px solid #aaa;padding:2px 6px;font-size:90%}"
         "img{max-width:100%}</style></head><body>",
         "<h1>chkwin report</h1>", f"<p><b>Verdict:</b> {_esc(verdict)}</p>",
         "<h2>Comparison</h2>", _html_table(ctable), _img(outdir / "latency.png")]
    md = ["# chkwin report", "", f"**Verdict:** {verdict}", "", "## Comparison", "",
          _md_table(ctable), "", "![latency](latency.png)", ""]
    for n, (path, log, corr) in enumerate(runs, 1):
        sub = outdir / f"log{n}"
        heatmap.write_all(log, corr, sub)
        s = summary.summarize(log, path, corr)
        stext = summary.text(s)
        title = f"Log {n}: {path}" + (" (truncated)" if s["truncated"] else "")
        h += [f"<h2>{_esc(title)}</h2>", f"<pre>{_esc(stext)}</pre>",
              "<h3>Failures</h3>", _html_table(failure_rows(corr)),
              "<h3>Arrivals by instruction offset</h3>", _img(sub / "offset.png"),
              "<h3>Arrivals by position in the computation</h3>",
              _img(sub / "position.png")]
        md += [f"## {title}", "", "```", stext.replace("```", "'''"), "```", "",
               "### Failures", "", _md_table(failure_rows(corr)), "",
               f"![offset](log{n}/offset.png)", "", f"![position](log{n}/position.png)", ""]
    h.append("</body></html>")
    (outdir / "report.html").write_text("\n".join(h))
    (outdir / "report.md").write_text("\n".join(md))
    return verdict
