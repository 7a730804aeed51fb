"""One page per set of logs or per experiment: report.html (self-contained:
images inline as data URIs) and report.md (images beside it).  An
experiment's page leads with its decisions and their evidence, then the
per-log detail.  Everything that comes from a log or a path is escaped in
both, since header strings are whatever the guest wrote."""

import base64
import html
import json
import pathlib
import re

from analysis import compare
from analysis import correlate
from analysis import decisions
from analysis import experiment
from analysis import figures
from analysis import heatmap
from analysis import prose
from analysis import summary
from analysis import tables
from analysis import verdict
from analysis import walks

STYLE = ("<style>body{font-family:sans-serif;max-width:1150px;margin:auto;"
         "padding:0 8px}table{border-collapse:collapse;display:block;"
         "overflow-x:auto;max-width:100%}td,th{border:1px solid #aaa;"
         "padding:2px 6px;font-size:90%}img{max-width:100%}"
         "pre{white-space:pre-wrap;overflow-wrap:anywhere}</style>")


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


def _md(value):
    """Text for markdown: HTML-escaped (no raw tags, no <autolinks>), and
    the characters of markdown's own syntax backslash-escaped: brackets
    (no link or image can form), emphasis, code and table pipes."""
    return re.sub(r"([\\`*_\[\]|])", r"\\\1",
                  html.escape(str(value), quote=False)).replace("\n", " ")


def _md_cell(value):
    return _md(value)


def _md_table(rows):
    head, *body = rows
    lines = ["| " + " | ".join(_md_cell(c) for c in head) + " |",
             "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(_md_cell(c) for c in r) + " |"
                              for r in body])


def failure_rows(corr):
    rows = [["kind", "inode", "block", "verdict ts (ns)", "cpu", "call", "window arrivals",
             "block completion cpu", "latency (ms)", "cross-CPU", "diagnosis"]]
    known = corr.log.window_known()
    for f in corr.failures:
        b = f.block
        rows.append([f.kind, f.ino, "-" if f.meta_block is None else f.meta_block, f.ts, f.cpu,
                     f.call.caller if f.call else "-",
                     (", ".join(f"{w.source} +{w.offset_ns} ns" for w in f.window_arrivals)
                      or "none") if known else "unknown (no window symbols)",
                     b.cpu if b else "-",
                     f"{b.latency_ns / 1e6:.3f}" if b else "-",
                     b.cross_cpu if b else "-", diagnosis_text(f.diagnosis)])
    return rows


def diagnosis_text(d):
    """One cell: the diagnosis in words, and the first suspects with their
    shares of failing and good computations and their p."""
    if d is None:
        return "-"
    if d.kind == "nothing":
        return f"{d.words} ({d.remains})"
    if not d.suspects:
        return d.words
    return d.words + ": " + "; ".join(
        f"{s.name} ({s.failing_share:.0%} of failing, "
        + (f"{s.good_share:.0%} of {d.good_computations} good, p {s.p:.2g})"
           if s.good_share is not None else "no good one covered)")
        for s in d.suspects[:3])


def _name(path, outdir):
    """A log's name in the report: relative to the report's directory."""
    try:
        return str(pathlib.Path(path).resolve().relative_to(outdir.resolve()))
    except ValueError:
        return str(path)


def _log_sections(outdir, runs):
    """(html, md) of the per-log detail: summary, failures, heat maps."""
    h, md = [], []
    for n, (path, log, corr) in enumerate(runs, 1):
        sub = outdir / f"log{n}"
        heatmap.write_all(log, corr, sub)
        name = _name(path, outdir)
        s = summary.summarize(log, name, corr)
        stext = summary.text(s)
        title = f"Log {n}: {name}" + (" (truncated)" if s["truncated"] else "")
        h += [f"<h2>{_esc(title)}</h2>", f"<pre>{_esc(stext)}</pre>",
              "<h3>Failures (attributed by the tracer in the boot)</h3>",
              _html_table(failure_rows(corr)),
              "<h3>Arrivals by instruction offset</h3>", _img(sub / "offset.png"),
              "<h3>Arrivals by position in the computation</h3>",
              _img(sub / "position.png")]
        md += [f"## {_md(title)}", "", "```", stext.replace("```", "'''"), "```", "",
               "### Failures (attributed by the tracer in the boot)", "",
               _md_table(failure_rows(corr)), "",
               f"![offset](log{n}/offset.png)", "", f"![position](log{n}/position.png)", ""]
    return h, md


def _page(outdir, h, md):
    (outdir / "report.html").write_text("\n".join(
        ["<!DOCTYPE html><html><head><meta charset='utf-8'>",
         "<title>chkwin report</title>", STYLE, "</head><body>"] + h
        + ["</body></html>"]))
    (outdir / "report.md").write_text("\n".join(md))


def write(outdir, runs):
    """runs: [(path, log, corr)].  Writes outdir/report.{html,md}."""
    outdir = pathlib.Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    rows = [compare.row(_name(p, outdir), log, corr) for p, log, corr in runs]
    compare.latency_plot(rows, outdir / "latency.png")
    verdict = compare.verdict(rows)
    ctable = compare.table(rows)
    h = ["<h1>chkwin report</h1>", f"<p><b>Verdict:</b> {_esc(verdict)}</p>",
         f"<p>{_esc(prose.LIMITS)}</p>",
         "<h2>Comparison</h2>", _html_table(ctable), _img(outdir / "latency.png")]
    md = ["# chkwin report", "", f"**Verdict:** {_md(verdict)}", "",
          _md(prose.LIMITS), "", "## Comparison", "",
          _md_table(ctable), "", "![latency](latency.png)", ""]
    lh, lmd = _log_sections(outdir, runs)
    _page(outdir, h + lh, md + lmd)
    return verdict


def write_experiment(outdir, doc, geometry=None, image=None, warn=None):
    """The page of the experiment in directory outdir whose record is doc
    (an ExperimentDoc), its verdicts first, its recorded boots' logs read
    (correlate.load: geometry, image and warn; LoadError when one cannot
    be).  Returns its Verdicts (analysis/decisions.py): the demo prints
    them, as `chkwin-analyze report` does."""
    outdir = pathlib.Path(outdir)
    runs = [(p, *correlate.load(p, geometry, image, warn))
            for p in (str(outdir / d) for d in doc.recorded_logs())]
    # Read in one direction: the record and the walks beside it, their
    # statistics, the verdicts, the tables, the figures, the prose; then
    # the page puts them in its own order.
    res = experiment.Results(doc, {pathlib.Path(p).parent.name: (log, corr)
                                   for p, log, corr in runs},
                             walks.of_boots(outdir, [b.dir for b in doc.boots]))
    lines = decisions.verdicts(res)
    sections = [("Conditions", tables.condition_table(res.condition_rows))]
    if res.model_rows:
        sections += [("Predicted against measured", tables.model_table(res.model_rows)),
                     ("Extrapolation to hardware", tables.hardware_table(res))]
    if res.decomposition:
        sections.append(("Decomposition (recorded boots)",
                         tables.decomposition_table(res.decomposition)))
    if res.walked:
        sections.append(("Failures walked by replay", tables.walks_table(res.walked)))
    boots = tables.boots_table(doc)
    leading = []
    if res.comparisons:
        figures.forest(res.comparisons, doc.settings.margin, outdir / "comparisons.png")
        leading.append(("comparisons.png", "every comparison against 1 and the margin"))
    if res.model_check:
        figures.predicted_measured(res.model_rows, res.model_check, verdict.MODEL_MARGIN,
                                   outdir / "model.png")
        leading.append(("model.png", "predicted against measured"))
    if figures.per_boot(res, outdir / "boots.png") is not None:
        leading.append(("boots.png", "each condition's rate boot by boot, aberrant boots marked"))
    (outdir / "verdicts.json").write_text(json.dumps(decisions.as_json(res), indent=1) + "\n")
    doses = []
    for d in res.doses:
        name = f"dose-{d['dose']}.png"
        figures.dose_plot(d, outdir / name)
        doses.append((name, f"dose: {d['dose']}"))
    design, notes = prose.design(res), prose.notes(res)

    h = ["<h1>chkwin experiment</h1>"]
    md = ["# chkwin experiment", ""]
    story = walks.first_explained(res.walked)
    if story:
        boot, walk = story
        figures.walk_timeline(boot, walk, outdir / "walk.png")
        h.append("<h2>A failure walked to its cause</h2>")
        md += ["## A failure walked to its cause", ""]
        h.append(f"<p>{_esc(prose.walk_lead(res))}</p>")
        md += [_md(prose.walk_lead(res)), ""]
        _images(h, md, outdir, [("walk.png", "one failure on the instruction count")])
        h.append(f"<pre>{_esc(walk['text'])}</pre>")
        md += ["```", walk["text"], "```", ""]
    h.append("<h2>Decision</h2>")
    md += ["## Decision", ""]
    _images(h, md, outdir, leading)
    h += ["<ul>"] + [f"<li>{_esc(text)}</li>" for _, text in lines] + ["</ul>"]
    h += [f"<p>{_esc(prose.LIMITS)}</p>", f"<p>{_esc(design)}</p>"]
    md += [f"- {_md(text)}" for _, text in lines]
    md += ["", _md(prose.LIMITS), "", _md(design), ""]
    for title, table in sections:
        _section(h, md, title, table, notes.get(title))
    if doses:
        h.append("<h2>Dose-response</h2>")
        md += ["## Dose-response", ""]
        _images(h, md, outdir, doses)
    _section(h, md, "Boots in the order they ran", boots)
    lh, lmd = _log_sections(outdir, runs)
    _page(outdir, h + lh, md + lmd)
    return lines


def _images(h, md, outdir, images):
    """Figures in outdir, [(file, alt text)]: inline in the HTML, beside
    the markdown."""
    for name, alt in images:
        h.append(_img(outdir / name))
        md += [f"![{alt}]({name})", ""]


def _section(h, md, title, table, note=None):
    """A titled table, with a paragraph before it when there is a note."""
    h.append(f"<h2>{title}</h2>")
    md += [f"## {title}", ""]
    if note:
        h.append(f"<p>{_esc(note)}</p>")
        md += [_md(note), ""]
    h.append(_html_table(table))
    md += [_md_table(table), ""]
