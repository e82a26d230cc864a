"""The runner: claims in, results rows out (the layer between the CLI / pytest plugin and the checks).

- `claim`: one claim run — `run_claim` → its results row (`claim_row`), `reproduce_command`, `versions`,
  the resume cache of a claim run (`claim_cache`), the hypothesis pin (`hypothesis_without_local_constants`);
- `verify`: `verify`, the orchestration of a selection of claims → the results dict (`ibverify.results/1`,
  whose `SCHEMA` and `summarize` live in `ibverify.report.schema`);
- `distributed`: claims (and `run_property` examples) as Dask tasks; it uses `claim`, never `verify`.
"""
