"""A/B of one switch over rounds of fresh processes: orchestration, statistics, report.

The method is in docs/adr/0020-ab-method.md, the ab.json format in
docs/adr/0021-ab-json-format.md. Import the module that does the job
(`kernbench.ab.run`, `kernbench.ab.outputs`, ...): this package imports nothing, so
loading one of its light modules (`settings`, `interleave`) loads no other.
"""
