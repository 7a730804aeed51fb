"""The analysis: reading chkwin logs, correlation, heat maps, the failure
model, the verdicts and the reports (analysis/chkwin-analyze is its command)."""
