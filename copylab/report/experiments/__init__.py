"""Each experiment's report-layer code, one package an experiment, named as its declaration in copylab.experiments:
its figures, captions, answers and parts of the report, bundled in the package's PLUGIN (copylab.report.plugins
finds it by that rule)."""
