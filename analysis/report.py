"""One page per set of logs or per experiment: report.html (self-contained:
images inline as data URIs) and report.md (images beside it).  An
experiment's page leads with its decisions and their evidence, then the
per-log detail.  Everything that comes from a log or a path is escaped in
both, since header strings are whatever the guest wrote."""

import base64
import html
import pathlib
import re

from analysis import compare
from analysis import experiment
from analysis import heatmap
from analysis import summary
from analysis import verdictplots
from analysis import walks

STYLE = ("<style>body{font-family:sans-serif;max-width:1150px;margin:auto;"
         "padding:0 8px}table{border-collapse:collapse;display:block;"
         "overflow-x:auto;max-width:100%}td,th{border:1px solid #aaa;"
         "padding:2px 6px;font-size:90%}img{max-width:100%}"
         "pre{white-space:pre-wrap;overflow-wrap:anywhere}</style>")


def _spread_text(fit):
    if not fit.df:
        return ("no condition has two boots with failures, so the spread between boots "
                "cannot be estimated and Poisson is assumed")
    return ("each comparison's intervals carry the dispersion of its own conditions' "
            "boots (quasi-Poisson, floored at Poisson's 1: never narrower than Poisson), "
            f"with Student's t on its degrees of freedom; pooled over the experiment "
            f"the dispersion is {fit.phi:.2g} on {fit.df} df")


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
             "block completion cpu", "latency (ms)", "cross-CPU"]]
    known = corr.log.window_known()
    for f in corr.failures:
        b = f.block
        rows.append([f.kind, f.ino, "-" if f.meta_block is None else f.meta_block, f.ts, f.cpu,
                     f.call.caller if f.call else "-",
                     (", ".join(f"{w.source} +{w.offset_ns} ns" for w in f.window_arrivals)
                      or "none") if known else "unknown (no window symbols)",
                     b.cpu if b else "-",
                     f"{b.latency_ns / 1e6:.3f}" if b else "-",
                     b.cross_cpu if b else "-"])
    return rows


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
         f"<p>{_esc(experiment.LIMITS)}</p>",
         "<h2>Comparison</h2>", _html_table(ctable), _img(outdir / "latency.png")]
    md = ["# chkwin report", "", f"**Verdict:** {_md(verdict)}", "",
          _md(experiment.LIMITS), "", "## Comparison", "",
          _md_table(ctable), "", "![latency](latency.png)", ""]
    lh, lmd = _log_sections(outdir, runs)
    _page(outdir, h + lh, md + lmd)
    return verdict


def write_experiment(outdir, doc, runs):
    """An experiment's page.  runs: [(path, log, corr)] of its recorded
    boots.  Returns the decision lines [(key, text)]."""
    outdir = pathlib.Path(outdir)
    by_dir = {pathlib.Path(p).parent.name: (log, corr) for p, log, corr in runs}
    rows = experiment.conditions(doc)
    rec = experiment.recorded(doc, by_dir)
    doses = [d for d in (experiment.dose(doc, w) for w in experiment.DOSES) if d]
    lines = experiment.decisions(doc, rec, doses)
    seed = doc.seed
    s = doc.settings
    if s.clock == "icount":
        clock = (f"on the icount clock (-icount shift={s.shift}, "
                 f"{2 ** s.shift} ns an instruction, 1 CPU, a phase seed a boot)")
    else:
        clock = f"on the host clock, {s.smp} CPUs"
    clock += f"; {experiment.plan_line(doc)}"
    design = (f"{len(doc.boots)} boots of {s.boot_seconds} guest seconds "
              f"(recorded: {s.record_seconds} s, sampler {s.sample_hz} Hz), "
              f"{s.workload}, {clock}; conditions interleaved in rounds "
              f"shuffled with seed {seed}; equivalence margin "
              f"+-{s.margin * 100:.0f}%; the verdicts treat the boot as the unit: "
              f"{_spread_text(experiment.spread(doc))}.")
    if s.windows:
        design += (" Recorded boots watch the windows stackscan found in their own kernel "
                   "(stackscan --windows-out, chkwin --windows; no built-in window names): "
                   + "; ".join(f"{f}: {', '.join(names) or 'none'}"
                               for f, names in sorted(s.windows.items())) + ".")
    ctable = experiment.condition_table(rows)
    rtable = experiment.recorded_table(rec)
    btable = [["round.slot", "boot", "failures", "checksum calls", "wall s"]] + [
        [f"{b.round}.{b.slot}", b.dir, str(b.failures_total),
         f"{b.calls:,}", f"{b.wall_seconds:.0f}"] for b in doc.boots]
    h = ["<h1>chkwin experiment</h1>", "<h2>Decision</h2>"]
    md = ["# chkwin experiment", "", "## Decision", ""]
    mrows = experiment.model_rows(doc)
    found = experiment.comparisons(doc, mrows)
    if found:
        verdictplots.forest(found, s.margin, outdir / "comparisons.png")
        h.append(_img(outdir / "comparisons.png"))
        md += ["![every comparison against 1 and the margin](comparisons.png)", ""]
    check = experiment.model_fit(mrows)
    if check:
        verdictplots.predicted_measured(mrows, check, experiment.MODEL_MARGIN,
                                        outdir / "model.png")
        h.append(_img(outdir / "model.png"))
        md += ["![predicted against measured](model.png)", ""]
    h += ["<ul>"] + [f"<li>{_esc(text)}</li>" for _, text in lines] + ["</ul>"]
    h += [f"<p>{_esc(experiment.LIMITS)}</p>", f"<p>{_esc(design)}</p>",
          "<h2>Conditions</h2>", _html_table(ctable)]
    md += [f"- {_md(text)}" for _, text in lines]
    md += ["", _md(experiment.LIMITS), "", _md(design), "", "## Conditions", "",
           _md_table(ctable), ""]
    if mrows:
        mtable = experiment.model_table(mrows)
        note = ("Predicted before measured: failures per call = W x lambda x 2^N ns "
                "(analysis/model.py), lambda from each boot's own interrupt counts.")
        h += ["<h2>Predicted against measured</h2>", f"<p>{_esc(note)}</p>",
              _html_table(mtable)]
        md += ["## Predicted against measured", "", _md(note), "", _md_table(mtable), ""]
    if mrows:
        xtable = experiment.hardware_table(doc)
        note = ("Extrapolated, not measured: the model with a Cortex-A72's instruction "
                "time (2 GHz, about one instruction a cycle) and the listing's W = 1, "
                "beside the 2021 reports: failures after \"anything between a few hours "
                "and three months of uptime\", and \"within a few minutes\" under the "
                "find | xargs md5sum loop (seed 001).  The last column is how long each "
                "flavour would run for the A/A plan's failures, to tell the rmb() change "
                "from none within the margin.")
        h += ["<h2>Extrapolation to hardware</h2>", f"<p>{_esc(note)}</p>",
              _html_table(xtable)]
        md += ["## Extrapolation to hardware", "", _md(note), "", _md_table(xtable), ""]
    if rec:
        h += ["<h2>Decomposition (recorded boots)</h2>", _html_table(rtable)]
        md += ["## Decomposition (recorded boots)", "", _md_table(rtable), ""]
    walked = walks.of_boots(outdir, [b.dir for b in doc.boots])
    if walked:
        n, explained, in_window = walks.totals(walked)
        note = (f"Attribution by {walks.SOURCE}: {explained} of {n} failures explained, "
                f"{in_window} by an interrupt inside a window stackscan found in the kernel. "
                "The per-log failure tables further down come from the flight recorder "
                "inside the recorded boots instead.")
        wtable = walks.rows(walked)
        h += ["<h2>Failures walked by replay</h2>", f"<p>{_esc(note)}</p>",
              _html_table(wtable)]
        md += ["## Failures walked by replay", "", _md(note), "", _md_table(wtable), ""]
    if doses:
        h.append("<h2>Dose-response</h2>")
        md += ["## Dose-response", ""]
    for d in doses:
        name = f"dose-{d['dose']}.png"
        experiment.dose_plot(d, outdir / name)
        h.append(_img(outdir / name))
        md += [f"![dose: {d['dose']}]({name})", ""]
    h += ["<h2>Boots in the order they ran</h2>", _html_table(btable)]
    md += ["## Boots in the order they ran", "", _md_table(btable), ""]
    lh, lmd = _log_sections(outdir, runs)
    _page(outdir, h + lh, md + lmd)
    return lines
