"""One module per benchmark scenario, each with a `run(harness, ...)` returning its typed row
(bench.results). bench.run calls them in order."""
